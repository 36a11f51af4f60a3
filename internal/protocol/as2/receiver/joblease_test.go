package receiver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence/db"
)

// ageJob moves a job's lease back by age, as if that much time had passed since it was
// claimed or last renewed.
func ageJob(t *testing.T, b *bench, id int64, age time.Duration) {
	t.Helper()
	writeTx(t, b, func(tx module.Tx) error {
		var at time.Time
		if err := tx.QueryRow(b.ctx, `SELECT next_attempt_at FROM as2_mdn_jobs WHERE id = ?`, id).Scan(tx.ScanTime(&at)); err != nil {
			return err
		}
		_, err := tx.Exec(b.ctx, `UPDATE as2_mdn_jobs SET next_attempt_at = ? WHERE id = ?`, tx.Time(at.Add(-age)), id)
		return err
	})
}

func setJobState(t *testing.T, b *bench, id int64, state string) {
	t.Helper()
	writeTx(t, b, func(tx module.Tx) error {
		_, err := tx.Exec(b.ctx, `UPDATE as2_mdn_jobs SET state = ? WHERE id = ?`, state, id)
		return err
	})
}

// A job claimed by a worker that then died (claimed with the receiver's lease, never
// renewed nor finished) is due again once that lease has passed, not minutes later;
// before, it stays claimed.
func TestJobLeaseAbandoned(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		// No receiver runs: its background loop would claim the jobs itself.
		b := newBench(t, s, nil, nil)
		tests := []struct {
			age       time.Duration
			claimable bool
		}{
			{age: 5 * time.Second, claimable: false},
			{age: 31 * time.Second, claimable: true},
		}
		for i, tt := range tests {
			j := queueTestJob(t, b, "http://127.0.0.1:1/mdn", fmt.Sprintf("<lease-%d@wharf>", i))
			dead, err := claimJobs(b.ctx, b.sql, "as2_in", 16, sendLease)
			if err != nil || len(dead) != 1 || dead[0].ID != j.ID {
				t.Fatalf("the dead worker's claim: %v, %+v", err, dead)
			}
			ageJob(t, b, j.ID, tt.age)
			again, err := claimJobs(b.ctx, b.sql, "as2_in", 16, sendLease)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(again) == 1 && again[0].ID == j.ID; got != tt.claimable {
				t.Fatalf("claimed %s after the dead worker's claim: %v, want %v", tt.age, got, tt.claimable)
			}
			if tt.claimable {
				if again[0].Attempts != 2 {
					t.Errorf("attempt %d, want 2", again[0].Attempts)
				}
				// The dead worker's claim is spent: only the new one records the outcome.
				if err := finishJob(b.ctx, b.sql, dead[0], jobSent, time.Now(), ""); !errors.Is(err, errClaimLost) {
					t.Errorf("finishing on the lapsed claim: %v, want errClaimLost", err)
				}
				if err := finishJob(b.ctx, b.sql, again[0], jobSent, time.Now(), ""); err != nil {
					t.Fatalf("finishing on the new claim: %v", err)
				}
				continue
			}
			// Out of the way of the next case.
			setJobState(t, b, j.ID, jobSent)
		}
	})
}

func jobState(t *testing.T, b *bench, id int64) (state string, attempts int, next time.Time) {
	t.Helper()
	err := b.sql.Read(b.ctx, func(tx module.Tx) error {
		return tx.QueryRow(b.ctx, `SELECT state, attempts, next_attempt_at FROM as2_mdn_jobs WHERE id = ?`, id).
			Scan(&state, &attempts, tx.ScanTime(&next))
	})
	if err != nil {
		t.Fatal(err)
	}
	return state, attempts, next
}

func queueTestJob(t *testing.T, b *bench, url, id string) *mdnJob {
	t.Helper()
	j := &mdnJob{Instance: "as2_in", URL: url, AS2From: "wharf", AS2To: "acme",
		MDNMessageID: id, ContentType: "text/plain", Body: []byte("mdn " + id)}
	if err := queueJob(b.ctx, b.sql, j); err != nil {
		t.Fatal(err)
	}
	return j
}

// After a restart, the background loop sends the MDN a killed process had claimed once
// that claim's lease has passed.
func TestJobLeaseAbandonedSent(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, nil, nil)
		listener := newMDNListener(t)
		j := queueTestJob(t, b, listener.url("/abandoned"), "<abandoned@wharf>")
		const lease = 200 * time.Millisecond
		if dead, err := claimJobs(b.ctx, b.sql, "as2_in", 16, lease); err != nil || len(dead) != 1 {
			t.Fatalf("the dead worker's claim: %v, %+v", err, dead)
		}
		b.start("as2_in", newDirectory(), nil, func(rc *Receiver) {
			rc.tick, rc.jobLease = 10*time.Millisecond, lease
		})
		listener.wait(t, "/abandoned", 1)
		eventually(t, "the job recorded sent", func() bool {
			state, attempts, _ := jobState(t, b, j.ID)
			return state == jobSent && attempts == 2
		})
		if n := listener.count("/abandoned"); n != 1 {
			t.Errorf("%d posts, want 1", n)
		}
	})
}

// slowListener takes asynchronous MDNs; posts to /slow wait until released.
type slowListener struct {
	srv     *httptest.Server
	mu      sync.Mutex
	posts   map[string]int
	release chan struct{}
}

func newSlowListener(t *testing.T) *slowListener {
	l := &slowListener{posts: map[string]int{}, release: make(chan struct{})}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		l.mu.Lock()
		l.posts[r.URL.Path]++
		l.mu.Unlock()
		if r.URL.Path == "/slow" {
			<-l.release
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *slowListener) count(path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.posts[path]
}

// A post that outlasts many leases keeps its claim renewed, and so do the jobs of its
// batch still waiting behind it: two processes sharing the database send each MDN
// once.
func TestJobSlowPostRenewed(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, nil, nil)
		listener := newSlowListener(t)
		released := false
		release := func() {
			if !released {
				released = true
				close(listener.release)
			}
		}
		defer release()
		slow := queueTestJob(t, b, listener.srv.URL+"/slow", "<slow@wharf>")
		after := queueTestJob(t, b, listener.srv.URL+"/after", "<after@wharf>")
		// The lease leaves room for a renewal delayed by a busy machine (tests of other
		// packages run beside this one); five leases still pass in seconds.
		const lease = time.Second
		tune := func(rc *Receiver) {
			rc.tick, rc.jobLease, rc.jobRenew = 10*time.Millisecond, lease, lease/5
		}
		b.start("as2_in", newDirectory(), nil, tune)
		b.start("as2_in", newDirectory(), nil, tune) // a second process on the same database
		eventually(t, "the slow post", func() bool { return listener.count("/slow") == 1 })
		_, _, first := jobState(t, b, slow.ID)
		// Hold the post until both claims were renewed well past several leases, or a
		// job was taken again.
		eventually(t, "the claims renewed past five leases", func() bool {
			_, _, s := jobState(t, b, slow.ID)
			_, _, a := jobState(t, b, after.ID)
			return s.After(first.Add(5*lease)) && a.After(first.Add(5*lease)) ||
				listener.count("/slow") > 1 || listener.count("/after") > 0
		})
		release()
		for _, j := range []*mdnJob{slow, after} {
			eventually(t, "job "+j.MDNMessageID+" sent", func() bool {
				state, _, _ := jobState(t, b, j.ID)
				return state == jobSent
			})
			if state, attempts, _ := jobState(t, b, j.ID); attempts != 1 {
				t.Errorf("job %s: %s after %d attempts, want 1", j.MDNMessageID, state, attempts)
			}
		}
		if n, m := listener.count("/slow"), listener.count("/after"); n != 1 || m != 1 {
			t.Errorf("posts: /slow %d, /after %d, want 1 each", n, m)
		}
	})
}
