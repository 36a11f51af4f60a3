package db_test

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"testing"
	"time"

	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// TestSessionLock: on PostgreSQL one session holds the lock, a second finds it taken, and
// it passes on once the holder releases it or its process ends (the store closes); on
// SQLite, one process to a file, the lock is always held.
func TestSessionLock(t *testing.T) {
	for _, dialect := range dbtest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			open := openHolders(t, dialect)
			a, b := open("a1"), open("b2")
			// A key of its own: tests of other packages run gateways on this database.
			key := db.SweepLockKey + 1 + rand.Int32N(1<<20)
			la, err := a.TryLock(ctx, key)
			if err != nil || la == nil {
				t.Fatalf("first TryLock = %v, %v; want the lock", la, err)
			}
			if err := la.Check(ctx); err != nil {
				t.Fatalf("Check of a held lock: %v", err)
			}
			lb, err := b.TryLock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if dialect == db.DialectSQLite {
				if lb == nil {
					t.Fatal("SQLite: the lock is always held, got nil")
				}
				return
			}
			if lb != nil {
				t.Fatal("second session got the lock its first holder keeps")
			}
			la.Release(ctx)
			if lb, err = b.TryLock(ctx, key); err != nil || lb == nil {
				t.Fatalf("TryLock after release = %v, %v; want the lock", lb, err)
			}
			// The holder's process dies without releasing: its session ends with it.
			admin, err := sql.Open("pgx", dbtest.PostgresBaseURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			var ended bool
			err = admin.QueryRowContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
				WHERE locktype = 'advisory' AND objsubid = 2 AND classid::bigint = $1`, key).Scan(&ended)
			if err != nil || !ended {
				t.Fatalf("end the holder's session: %v, %v", ended, err)
			}
			if err := lb.Check(ctx); err == nil {
				t.Fatal("Check after the holder's session ended reports it held")
			}
			lb.Release(ctx)
			// The ended session tells its client before it has released its locks, so the
			// lock comes free a moment later: a standby tries again, as the sweeper does
			// every interval.
			deadline := time.Now().Add(10 * time.Second)
			for {
				if la, err = a.TryLock(ctx, key); err != nil || la != nil {
					break
				}
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err != nil || la == nil {
				t.Fatalf("TryLock after the holder died = %v, %v; want the lock within 10 s", la, err)
			}
			la.Release(ctx)
		})
	}
}
