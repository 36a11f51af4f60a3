package db_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

func TestSQLiteSettings(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "odd ?#% dir")
	must(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "wharf.db")
	s := must1[*db.Store](t)(db.Open(ctx, db.Options{SQLitePath: path, Logger: slog.New(slog.DiscardHandler), AuditKey: dbtest.AuditKey}))
	defer s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not created at %s: %v", path, err)
	}
	if s.Dialect() != "sqlite" {
		t.Fatalf("Dialect = %q", s.Dialect())
	}
	for _, tc := range []struct {
		pragma string
		reader bool
		want   string
	}{
		{"journal_mode", false, "wal"},
		{"synchronous", false, "2"}, // FULL
		{"foreign_keys", false, "1"},
		{"busy_timeout", false, "10000"},
		{"temp_store", false, "2"}, // MEMORY
		{"temp_store", true, "2"},
		{"secure_delete", false, "1"}, // erasure: freed content is zeroed
		{"journal_mode", true, "wal"},
		{"synchronous", true, "2"},
		{"query_only", true, "1"},
	} {
		got := must1[string](t)(db.QueryText(ctx, s, tc.reader, "PRAGMA "+tc.pragma))
		if got != tc.want {
			t.Errorf("PRAGMA %s (reader %v) = %q, want %q", tc.pragma, tc.reader, got, tc.want)
		}
	}
}

// Reads run on their own pool against the last committed state, so an open write
// transaction does not hold them up.
func TestSQLiteReadsDoNotWaitForTheWriter(t *testing.T) {
	s := dbtest.SQLite(t)
	fixture(t, s)
	m := insert(t, s, 1, writer)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release := must1[func()](t)(db.HoldWriter(ctx, s))
	defer release()
	got, err := s.GetMessage(ctx, m.ID)
	must(t, err)
	if got.Status != persistence.StatusInProgress {
		t.Fatalf("read %+v", got)
	}
	if _, _, err := s.ListMessages(ctx, persistence.MessageFilter{}); err != nil {
		t.Fatal(err)
	}
}

// Two stores on one file (two processes, say a server and a CLI command) take turns at
// the write lock within the busy timeout, and claims stay exclusive.
func TestSQLiteTwoStoresOnOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wharf.db")
	a := must1[*db.Store](t)(db.Open(ctx, db.Options{SQLitePath: path, Logger: slog.New(slog.DiscardHandler), AuditKey: dbtest.AuditKey}))
	defer a.Close()
	b := must1[*db.Store](t)(db.Open(ctx, db.Options{SQLitePath: path, Logger: slog.New(slog.DiscardHandler), AuditKey: dbtest.AuditKey}))
	defer b.Close()
	fixture(t, a)
	insert(t, a, 60, writer)
	insert(t, b, 60, writer)

	var mu sync.Mutex
	taken := make(map[int64]int)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, s := range []*db.Store{a, b, a, b} {
		wg.Go(func() {
			for {
				cs, err := s.ClaimDeliveries(ctx, writer, 5, time.Minute, time.Now())
				if err != nil {
					errs <- err
					return
				}
				if len(cs) == 0 {
					return
				}
				mu.Lock()
				for _, c := range cs {
					taken[c.Delivery.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(taken) != 120 {
		t.Fatalf("claimed %d distinct deliveries, want 120", len(taken))
	}
	for id, n := range taken {
		if n != 1 {
			t.Fatalf("delivery %d claimed %d times", id, n)
		}
	}
	checkInvariants(t, b)
}
