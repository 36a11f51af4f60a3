package receiver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"wharf/internal/module"
)

// A reserved row is held by the request storing its message, which renews it every
// reservationRenew while it works; a row not renewed for reservationLease belongs to a
// request that no longer runs (its process ended), and a resend of the message or the
// background loop takes it over. The reserved span is local work only (storing the
// message and recording its MDN; the body was read before and the answer is written
// after), so a lease far shorter than the request's time-outs suffices, and a restart
// after a crash finishes the interrupted messages within a lease.
const (
	reservationLease = 30 * time.Second
	reservationRenew = reservationLease / 3
)

// holdReservation renews the row's reservation until the returned stop is called; stop
// waits until no renewal runs, and may be called again.
func (rc *Receiver) holdReservation(ctx context.Context, row *inboundRow) (stop func()) {
	id, token := row.ID, row.ClaimToken
	return renewUntilStopped(ctx, rc.renewEvery, func(ctx context.Context) {
		if err := renewReservation(ctx, rc.deps.DB, id, token); err != nil && ctx.Err() == nil {
			rc.log.WarnContext(ctx, "renew the AS2 message's reservation", "as2_message_id", row.AS2MessageID, "err", err)
		}
	})
}

// renewUntilStopped calls renew every period until the returned stop is called, also
// after ctx ends (the work it holds a lease for finishes first); stop waits until no
// renewal runs, and may be called again.
func renewUntilStopped(ctx context.Context, every time.Duration, renew func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			renew(ctx)
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}

// renewReservation moves a reserved row's updated_at to now while the token owns it.
func renewReservation(ctx context.Context, db module.SQL, id int64, token string) error {
	return db.Write(ctx, func(tx module.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE as2_inbound SET updated_at = ? WHERE id = ? AND state = ? AND claim_token = ?`,
			tx.Time(tx.Now()), id, stateReserved, token)
		if err != nil {
			return fmt.Errorf("renew AS2 message row %d: %w", id, err)
		}
		return nil
	})
}

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
	h.stop = renewUntilStopped(ctx, rc.jobRenew, func(ctx context.Context) {
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
