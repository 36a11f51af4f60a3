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
	return rc.renewUntilStopped(ctx, rc.renewEvery, func(ctx context.Context) {
		if err := renewReservation(ctx, rc.deps.DB, id, token); err != nil && ctx.Err() == nil {
			rc.log.WarnContext(ctx, "renew the AS2 message's reservation", "as2_message_id", row.AS2MessageID, "err", err)
		}
	})
}

// renewUntilStopped calls renew every period until the returned stop is called, also
// after ctx ends (the work it holds a lease for finishes first); stop waits until no
// renewal runs, and may be called again.
func (rc *Receiver) renewUntilStopped(ctx context.Context, every time.Duration, renew func(context.Context)) (stop func()) {
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
