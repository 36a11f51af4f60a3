package db_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
)

// TestClaimSettlesWithWhatCommittedWhileItWaited (PostgreSQL): a claim's statement reads
// the messages before it locks them; when another transaction changed a message's
// deliveries and committed while the claim waited for the message's lock, the claim
// settles the message from its deliveries as they are after that commit, not as its
// snapshot saw them.
func TestClaimSettlesWithWhatCommittedWhileItWaited(t *testing.T) {
	url := dbtest.PostgresURL(t)
	ctx := context.Background()
	s := openStore(t, url)
	fixture(t, s)
	m := insert(t, s, 1, writer, poster)[0]

	other, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var holder int
	if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	// What a transaction settling another delivery of the message does: the delivery's
	// new state and a write of the message's row, which it keeps locked until it commits.
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET state = 'failed' WHERE message_id = $1 AND target = $2`, m.ID, string(poster)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET updated_at = updated_at WHERE id = $1`, m.ID); err != nil {
		t.Fatal(err)
	}

	type result struct {
		claims []persistence.Claim
		err    error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := s.ClaimDeliveries(ctx, writer, 10, time.Minute, time.Now())
		done <- result{cs, err}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		if err := other.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holder).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim never waited for the message's lock")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.claims) != 1 {
		t.Fatalf("claim = %d claims, %v; want the writer's delivery", len(r.claims), r.err)
	}
	if got := r.claims[0].Message.Status; got != persistence.StatusError {
		t.Fatalf("claim settled the message as %s, want %s (the other delivery failed before the claim locked it)", got, persistence.StatusError)
	}
	wantStatus(t, s, m.ID, persistence.StageDispatched, persistence.StatusError)
}
