package db_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

const benchBatch = 100

func reportMessages(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkInsertMessages stores batches of 100 messages dispatched to one target, each
// batch with its id block allocated first (two commits a batch).
func BenchmarkInsertMessages(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			s := dbtest.Open(b, d)
			fixture(b, s)
			b.ResetTimer()
			for range b.N {
				insert(b, s, benchBatch, writer)
			}
			reportMessages(b, benchBatch)
		})
	}
}

// BenchmarkClaimComplete claims 100 deliveries and completes them as delivered (two
// commits); the inserts that feed it are not timed.
func BenchmarkClaimComplete(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			s := dbtest.Open(b, d)
			fixture(b, s)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				insert(b, s, benchBatch, writer)
				b.StartTimer()
				claimCompleteBatch(b, s)
			}
			reportMessages(b, benchBatch)
		})
	}
}

// BenchmarkPipeline is a message's whole life in the store at batch 100: allocate ids,
// insert and dispatch, claim, complete (four commits a batch).
func BenchmarkPipeline(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			s := dbtest.Open(b, d)
			fixture(b, s)
			b.ResetTimer()
			for range b.N {
				insert(b, s, benchBatch, writer)
				claimCompleteBatch(b, s)
			}
			reportMessages(b, benchBatch)
		})
	}
}

func claimCompleteBatch(b *testing.B, s *db.Store) {
	ctx := context.Background()
	cs, err := s.ClaimDeliveries(ctx, writer, benchBatch, time.Minute, time.Now())
	if err != nil || len(cs) != benchBatch {
		b.Fatalf("claimed %d: %v", len(cs), err)
	}
	done := make([]persistence.Completion, len(cs))
	for i, c := range cs {
		done[i] = persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered}
	}
	res, err := s.CompleteDeliveries(ctx, done)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range res {
		if e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkPlaceholders compares the two ways to pass arguments: native parameters
// (what the store does: ? rebound to $n on PostgreSQL, values encoded by the driver,
// statements compiled once per transaction on SQLite and cached per connection by pgx)
// and bun's client-side formatting (values rendered into the SQL text). One operation is
// a transaction that is rolled back, so the numbers are the statements' cost, not the
// commit's: "insert" runs one 64-row insert, "select" ten point selects by key.
func BenchmarkPlaceholders(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			ctx := context.Background()
			s := dbtest.Open(b, d)
			must(b, db.ExecRaw(ctx, s, `CREATE TABLE bench_rows (id BIGINT, kind TEXT, reason TEXT, actor TEXT)`))
			// The selects read a table the rolled-back inserts leave alone, so dead rows do
			// not pile up under them.
			must(b, db.ExecRaw(ctx, s, `CREATE TABLE bench_lookup (id BIGINT PRIMARY KEY, reason TEXT)`))
			for i := range 1000 {
				must(b, db.ExecRaw(ctx, s, `INSERT INTO bench_lookup (id, reason) VALUES (?, ?)`, int64(i), fmt.Sprintf("reason %d", i)))
			}
			insert := `INSERT INTO bench_rows (id, kind, reason, actor) VALUES `
			var args []any
			for i := range 64 {
				if i > 0 {
					insert += ", "
				}
				insert += "(?, ?, ?, ?)"
				args = append(args, int64(i), "delivery_changed", fmt.Sprintf("attempt %d failed: connection refused", i), "system")
			}
			const point = `SELECT reason FROM bench_lookup WHERE id = ?`
			bdb := db.BunDB(s)

			native := func(b *testing.B, statements func(tx *sql.Tx)) {
				for range b.N {
					tx := must1[*sql.Tx](b)(bdb.DB.BeginTx(ctx, nil))
					statements(tx)
					must(b, tx.Rollback())
				}
			}
			formatted := func(b *testing.B, statements func(tx bun.Tx)) {
				for range b.N {
					tx := must1[bun.Tx](b)(bdb.BeginTx(ctx, nil))
					statements(tx)
					must(b, tx.Rollback())
				}
			}
			b.Run("insert/native", func(b *testing.B) {
				q := db.Rebind(s, insert)
				native(b, func(tx *sql.Tx) { must1[sql.Result](b)(tx.ExecContext(ctx, q, args...)) })
			})
			b.Run("insert/bun", func(b *testing.B) {
				formatted(b, func(tx bun.Tx) { must1[sql.Result](b)(tx.ExecContext(ctx, insert, args...)) })
			})
			b.Run("select/native", func(b *testing.B) {
				q := db.Rebind(s, point)
				native(b, func(tx *sql.Tx) {
					queryRow := func(args ...any) *sql.Row { return tx.QueryRowContext(ctx, q, args...) }
					if s.Dialect() == db.DialectSQLite {
						st := must1[*sql.Stmt](b)(tx.PrepareContext(ctx, q))
						queryRow = func(args ...any) *sql.Row { return st.QueryRowContext(ctx, args...) }
					}
					for i := range 10 {
						var r string
						must(b, queryRow(int64(i)).Scan(&r))
					}
				})
			})
			b.Run("select/bun", func(b *testing.B) {
				formatted(b, func(tx bun.Tx) {
					for i := range 10 {
						var r string
						must(b, tx.QueryRowContext(ctx, point, int64(i)).Scan(&r))
					}
				})
			})
		})
	}
}
