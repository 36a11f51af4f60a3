package receiver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"wharf/internal/module"
)

// A claimed asynchronous MDN job is held by the worker posting it, which renews the
// claim every sendRenew while it works through its batch; a job not renewed for
// sendLease belongs to a worker that no longer runs (its process ended), and the
// background loop of any process takes it again. The renewal, not the lease, keeps a
// slow post (up to the client's time-out) from being sent twice, so the lease can be
// short and a restart after a crash sends the interrupted MDNs within about a lease.
const (
	sendLease = 30 * time.Second
	sendRenew = sendLease / 3
)

// heldJobs are the claimed jobs of a batch not yet finished, renewed until released.
type heldJobs struct {
	mu   sync.Mutex
	jobs map[int64]string // id → claim token
	stop func()
}

// holdJobs renews the claims of jobs until each is released and stop is called.
func (rc *Receiver) holdJobs(ctx context.Context, jobs []mdnJob) *heldJobs {
	h := &heldJobs{jobs: make(map[int64]string, len(jobs))}
	for _, j := range jobs {
		h.jobs[j.ID] = j.ClaimToken
	}
	h.stop = rc.renewUntilStopped(ctx, rc.jobRenewEvery, func(ctx context.Context) {
		h.mu.Lock()
		claims := make(map[int64]string, len(h.jobs))
		for id, token := range h.jobs {
			claims[id] = token
		}
		h.mu.Unlock()
		if len(claims) == 0 {
			return
		}
		if err := renewJobs(ctx, rc.deps.DB, claims, rc.jobLease); err != nil && ctx.Err() == nil {
			rc.log.WarnContext(ctx, "renew the claims of asynchronous MDNs", "err", err)
		}
	})
	return h
}

// release stops renewing the job's claim.
func (h *heldJobs) release(id int64) {
	h.mu.Lock()
	delete(h.jobs, id)
	h.mu.Unlock()
}

// renewJobs pushes the next attempt of each claimed job past lease while its token still
// owns it.
func renewJobs(ctx context.Context, db module.SQL, claims map[int64]string, lease time.Duration) error {
	return db.Write(ctx, func(tx module.Tx) error {
		now := tx.Now()
		for id, token := range claims {
			_, err := tx.Exec(ctx, `UPDATE as2_mdn_jobs SET next_attempt_at = ?, updated_at = ? WHERE id = ? AND state = ? AND claim_token = ?`,
				tx.Time(now.Add(lease)), tx.Time(now), id, jobPending, token)
			if err != nil {
				return fmt.Errorf("renew the claim of asynchronous MDN %d: %w", id, err)
			}
		}
		return nil
	})
}
