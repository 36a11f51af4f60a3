package db_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// TestPostgresPoolKeepsABurstsConnections holds that connections a burst of concurrent
// work opened stay in the pool when it ends, so the next burst does not make PostgreSQL
// start a backend for each of them again.
func TestPostgresPoolKeepsABurstsConnections(t *testing.T) {
	s := dbtest.Postgres(t)
	pool := db.BunDB(s).DB
	ctx := context.Background()
	const burst = db.PostgresPoolSize
	conns := make([]*sql.Conn, burst)
	var wg sync.WaitGroup
	errs := make([]error, burst)
	for i := range conns {
		wg.Go(func() {
			conns[i], errs[i] = pool.Conn(ctx)
			if errs[i] == nil {
				errs[i] = conns[i].PingContext(ctx)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if open := pool.Stats().OpenConnections; open != burst {
		t.Fatalf("%d connections open during the burst, want %d", open, burst)
	}
	for _, c := range conns {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st := pool.Stats()
	if st.MaxIdleClosed != 0 || st.Idle != burst {
		t.Errorf("after the burst %d connections idle and %d closed for want of idle room; want all %d idle", st.Idle, st.MaxIdleClosed, burst)
	}
}
