package receiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence/db"
)

// countingSQL counts the write transactions begun.
type countingSQL struct {
	module.SQL
	writes atomic.Int32
}

func (c *countingSQL) Write(ctx context.Context, fn func(tx module.Tx) error) error {
	c.writes.Add(1)
	return c.SQL.Write(ctx, fn)
}

// The writes that arrive while a transaction runs are committed together in the next
// one; when that fails, each runs alone, so only the failing write fails.
func TestRowWriter(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		sql := &countingSQL{SQL: s.ModuleSQL()}
		g := newRowWriter(sql)
		queue := func(name string) func(ctx context.Context, tx module.Tx) error {
			return func(ctx context.Context, tx module.Tx) error {
				return insertJob(ctx, tx, &mdnJob{Instance: "as2_in", URL: "http://127.0.0.1:1/mdn", AS2From: "A", AS2To: "B",
					MDNMessageID: name, ContentType: "text/plain", Body: []byte(name)})
			}
		}
		jobs := func(name string) int {
			var n int
			if err := sql.Read(ctx, func(tx module.Tx) error {
				return tx.QueryRow(ctx, `SELECT COUNT(*) FROM as2_mdn_jobs WHERE mdn_message_id = ?`, name).Scan(&n)
			}); err != nil {
				t.Fatal(err)
			}
			return n
		}
		// round holds a first write open until the others wait, then lets them commit;
		// fail names the write that fails.
		round := func(t *testing.T, tag string, n int, fail int) []error {
			release := make(chan struct{})
			first := make(chan error, 1)
			go func() {
				first <- g.write(ctx, func(ctx context.Context, tx module.Tx) error {
					<-release
					return queue(tag+"-first")(ctx, tx)
				})
			}()
			eventually(t, "the first write running", func() bool {
				g.mu.Lock()
				defer g.mu.Unlock()
				return g.busy
			})
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					fn := queue(fmt.Sprintf("%s-%d", tag, i))
					if i == fail {
						fn = func(context.Context, module.Tx) error { return errors.New("refused") }
					}
					errs[i] = g.write(ctx, fn)
				})
			}
			eventually(t, "the writes waiting", func() bool {
				g.mu.Lock()
				defer g.mu.Unlock()
				return len(g.pending) == n
			})
			close(release)
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			return errs
		}

		t.Run("shared", func(t *testing.T) {
			before := sql.writes.Load()
			errs := round(t, "shared", 10, -1)
			for i, err := range errs {
				if err != nil {
					t.Errorf("write %d: %v", i, err)
				}
				if jobs(fmt.Sprintf("shared-%d", i)) != 1 {
					t.Errorf("write %d not committed", i)
				}
			}
			if n := sql.writes.Load() - before; n != 2 {
				t.Errorf("%d transactions for 11 writes, want 2", n)
			}
		})

		t.Run("one fails", func(t *testing.T) {
			errs := round(t, "failing", 5, 2)
			for i, err := range errs {
				switch {
				case i == 2 && err == nil:
					t.Error("the failing write reported no error")
				case i != 2 && err != nil:
					t.Errorf("write %d: %v", i, err)
				case i != 2 && jobs(fmt.Sprintf("failing-%d", i)) != 1:
					t.Errorf("write %d not committed", i)
				}
			}
		})

		t.Run("idle", func(t *testing.T) {
			if err := g.write(ctx, queue("idle")); err != nil || jobs("idle") != 1 {
				t.Fatalf("%v, %d rows", err, jobs("idle"))
			}
			if g.busy || len(g.pending) != 0 {
				t.Errorf("busy %v with %d pending after the last write", g.busy, len(g.pending))
			}
		})
	})
}
