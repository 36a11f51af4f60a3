package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
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

// Transactions committed in a group tell the history hook what they wrote, as a
// transaction of its own does; one that failed in the group tells nothing.
func TestSQLiteGroupCommitAnnouncesHistory(t *testing.T) {
	s := dbtest.SQLite(t)
	fixture(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	announced := map[int64]bool{}
	s.OnHistory(func(ids []int64) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			announced[id] = true
		}
	})
	const n = 6
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, n))
	release := must1[func()](t)(db.HoldWriter(ctx, s))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := first + int64(i)
			if i == 3 {
				id-- // the id of writer 2: of the two, one is refused
			}
			_, errs[i] = s.InsertMessages(ctx, []persistence.NewMessage{newMessage(id, true, writer)})
		})
	}
	waitFor(t, ctx, func() bool { return db.GroupQueued(s) == n-1 })
	release()
	wg.Wait()
	if db.GroupsCommitted(s) == 0 {
		t.Fatal("no group was committed")
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if i == 2 || i == 3 {
			continue
		}
		if id := first + int64(i); errs[i] != nil || !announced[id] {
			t.Errorf("message %d: insert error %v, announced %t", id, errs[i], announced[id])
		}
	}
	if (errs[2] == nil) == (errs[3] == nil) {
		t.Errorf("two inserts of message %d: errors %v and %v, want exactly one refused", first+2, errs[2], errs[3])
	}
	if !announced[first+2] || announced[first+3] {
		t.Errorf("announced %v: want message %d and not %d (never stored)", announced, first+2, first+3)
	}
}
