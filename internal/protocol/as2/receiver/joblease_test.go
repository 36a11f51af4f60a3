package receiver

import (
	"fmt"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// ageJob moves a job's lease back by age, as if that much time had passed since it was
// claimed or last renewed.
func ageJob(t *testing.T, b *bench, id int64, age time.Duration) {
	t.Helper()
	err := b.sql.Write(b.ctx, func(tx module.Tx) error {
		var at time.Time
		if err := tx.QueryRow(b.ctx, `SELECT next_attempt_at FROM as2_mdn_jobs WHERE id = ?`, id).Scan(tx.ScanTime(&at)); err != nil {
			return err
		}
		_, err := tx.Exec(b.ctx, `UPDATE as2_mdn_jobs SET next_attempt_at = ? WHERE id = ?`, tx.Time(at.Add(-age)), id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func setJobState(t *testing.T, b *bench, id int64, state string) {
	t.Helper()
	err := b.sql.Write(b.ctx, func(tx module.Tx) error {
		_, err := tx.Exec(b.ctx, `UPDATE as2_mdn_jobs SET state = ? WHERE id = ?`, state, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A job claimed by a worker that then died (claimed with the receiver's lease, never
// renewed nor finished) is due again once that lease has passed, not minutes later;
// before, it stays claimed.
func TestJobLeaseAbandoned(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		// No receiver runs: its background loop would claim the jobs itself.
		b := newBench(t, s, nil, nil)
		const instance = persistence.InstanceName("as2_in")
		tests := []struct {
			age       time.Duration
			claimable bool
		}{
			{age: 5 * time.Second, claimable: false},
			{age: 31 * time.Second, claimable: true},
		}
		for i, tt := range tests {
			j := &mdnJob{Instance: instance, URL: "http://127.0.0.1:1/mdn", AS2From: "wharf", AS2To: "acme",
				MDNMessageID: fmt.Sprintf("<lease-%d@wharf>", i), ContentType: "text/plain", Body: []byte("mdn")}
			if err := queueJob(b.ctx, b.sql, j); err != nil {
				t.Fatal(err)
			}
			dead, err := claimJobs(b.ctx, b.sql, instance, 16, sendLease)
			if err != nil || len(dead) != 1 || dead[0].ID != j.ID {
				t.Fatalf("the dead worker's claim: %v, %+v", err, dead)
			}
			ageJob(t, b, j.ID, tt.age)
			again, err := claimJobs(b.ctx, b.sql, instance, 16, sendLease)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(again) == 1 && again[0].ID == j.ID; got != tt.claimable {
				t.Fatalf("claimed %s after the dead worker's claim: %v, want %v", tt.age, got, tt.claimable)
			}
			if tt.claimable && again[0].Attempts != 2 {
				t.Errorf("attempt %d, want 2", again[0].Attempts)
			}
			// Out of the way of the next case.
			setJobState(t, b, j.ID, jobSent)
		}
	})
}
