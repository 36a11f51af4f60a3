package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// Write transactions that queue for SQLite's writer commit together, yet each succeeds,
// fails or panics on its own: a failed one leaves nothing behind and the others commit.
func TestSQLiteGroupCommit(t *testing.T) {
	mods := []db.ModuleSchema{widgetSchema("CREATE TABLE widgets (name TEXT PRIMARY KEY, made_at TEXT NOT NULL);")}
	s := dbtest.OpenModules(t, "sqlite", mods)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := s.ModuleSQL()
	errRefused := errors.New("refused")

	// The first writer waits for the held write lock; the others queue behind it and
	// then go in one group.
	release := must1[func()](t)(db.HoldWriter(ctx, s))
	const n = 9
	errs := make([]error, n)
	panics := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = q.Write(ctx, func(tx module.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO widgets (name, made_at) VALUES (?, ?)`, fmt.Sprint("w", i), tx.Time(tx.Now())); err != nil {
					return err
				}
				switch {
				case i == 7:
					panic("widget jammed")
				case i%3 == 1:
					return errRefused
				}
				return nil
			})
		})
	}
	waitFor(t, ctx, func() bool { return db.GroupQueued(s) == n-1 })
	release()
	wg.Wait()

	if db.GroupsCommitted(s) == 0 {
		t.Fatal("no group was committed")
	}
	for i := range n {
		want := error(nil)
		if i%3 == 1 {
			want = errRefused
		}
		if i == 7 {
			if panics[i] != "widget jammed" {
				t.Errorf("writer 7 recovered %v, want its own panic", panics[i])
			}
			want = nil
		} else if panics[i] != nil {
			t.Errorf("writer %d panicked with %v", i, panics[i])
		}
		if !errors.Is(errs[i], want) {
			t.Errorf("writer %d: %v, want %v", i, errs[i], want)
		}
		var count int
		must(t, q.Read(ctx, func(tx module.Tx) error {
			return tx.QueryRow(ctx, `SELECT COUNT(*) FROM widgets WHERE name = ?`, fmt.Sprint("w", i)).Scan(&count)
		}))
		if stored := i%3 != 1 && i != 7; (count == 1) != stored {
			t.Errorf("writer %d: %d rows stored, want stored %t", i, count, stored)
		}
	}
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met before the deadline")
		case <-time.After(time.Millisecond):
		}
	}
}
