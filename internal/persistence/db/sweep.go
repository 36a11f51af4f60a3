package db

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"wharf/internal/persistence"
)

// The sweep's writes pick their rows with SKIP LOCKED on PostgreSQL (a row a worker is
// completing right now is simply left for the next pass) and repeat the state they picked
// on in the UPDATE, so nothing is applied twice. Each takes the longest overdue first
// (expired lease, wake-up or receipt deadline, then id), reading a partial index in order.

const (
	defaultSweepLimit    = 500
	defaultMaxDispatches = 5
	defaultWakeBackoff   = 30 * time.Second
	leaseExpiredReason   = "lease expired"
	ackExpiredReason     = "no receipt or completion report before the deadline"
	// A handoff's reference sits between these two.
	ackExpiredRefPrefix = "handoff "
	ackExpiredRefSuffix = " not completed before the deadline"
)

func sweepLimit(limit int) int {
	if limit <= 0 {
		return defaultSweepLimit
	}
	return min(limit, maxClaim)
}

func sortTransitions(trs []transition) {
	slices.SortFunc(trs, func(a, b transition) int { return cmp.Compare(a.d.ID, b.d.ID) })
}

// recordTransitions reads the transitions an UPDATE … RETURNING made (the sweep's, a
// session's parking or release), records each with the reason in id order, and returns
// the deliveries as they now are.
func (t *txn) recordTransitions(rows *sql.Rows, err error, reason string) ([]persistence.Delivery, error) {
	trs, err := collect(rows, err, scanTransition)
	if err != nil {
		return nil, err
	}
	sortTransitions(trs)
	for _, tr := range trs {
		t.changed(tr, reason, "", time.Time{})
	}
	return deliveriesOf(trs), nil
}

func deliveriesOf(trs []transition) []persistence.Delivery {
	out := make([]persistence.Delivery, len(trs))
	for i, tr := range trs {
		out[i] = tr.d
	}
	return out
}

// ExpireLeases turns deliveries whose lease ran out into retrying, due now, oldest first.
// The caller publishes their wake-ups; the sweep wakes them again after WakeupGrace.
func (s *Store) ExpireLeases(ctx context.Context, now time.Time, limit int) ([]persistence.Delivery, error) {
	now = utc(now)
	out, err := s.retryClaimed(ctx, now, limit, `d.lease_until < ?`, s.tv(now), leaseExpiredReason)
	if err != nil {
		return nil, fmt.Errorf("expire leases: %w", err)
	}
	return out, nil
}

// retryClaimed turns up to limit delivering rows that also match cond (with its one
// argument) into retrying, due at now, oldest lease first, each with reason in its history.
func (s *Store) retryClaimed(ctx context.Context, now time.Time, limit int, cond string, arg any, reason string) ([]persistence.Delivery, error) {
	var out []persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `WITH picked AS MATERIALIZED (
				SELECT d.id FROM deliveries d
				WHERE d.state = 'delivering' AND `+cond+`
				ORDER BY d.lease_until, d.id LIMIT ?`+s.skipLocked+`
			)
			UPDATE deliveries SET previous_state = state, state = 'retrying',
				claim_token = '', lease_until = NULL, wakeups = 0,
				next_attempt_at = ?, next_wakeup_at = ?, last_error = ?, updated_at = ?
			WHERE id IN (SELECT id FROM picked) AND state = 'delivering'
			RETURNING `+transitionCols,
			arg, sweepLimit(limit), s.tv(now), s.tv(now.Add(WakeupGrace)), reason, s.tv(now))
		out, err = t.recordTransitions(rows, err, reason)
		return err
	})
	return out, err
}

// WakeDue picks claimable deliveries whose next wake-up is reached, oldest first. One that
// already had MaxDispatches unanswered wake-ups becomes stalled; every other one counts
// one more wake-up and is not picked again before now + Backoff(its new count).
func (s *Store) WakeDue(ctx context.Context, now time.Time, p persistence.WakeupPolicy, limit int) (woken, stalled []persistence.Delivery, err error) {
	now = utc(now)
	if p.MaxDispatches <= 0 {
		p.MaxDispatches = defaultMaxDispatches
	}
	if p.Backoff == nil {
		p.Backoff = func(int) time.Duration { return defaultWakeBackoff }
	}
	stallReason := fmt.Sprintf("no worker claimed it after %d wake-ups", p.MaxDispatches)
	err = s.write(ctx, func(t *txn) error {
		woken, stalled = nil, nil
		type candidate struct {
			id      int64
			wakeups int
		}
		rows, err := t.query(ctx, `SELECT d.id, d.wakeups FROM deliveries d
			WHERE d.next_wakeup_at <= ? AND `+claimable+`
			ORDER BY d.next_wakeup_at, d.id LIMIT ?`+s.skipLocked,
			s.tv(now), s.tv(now), sweepLimit(limit))
		cands, err := collect(rows, err, func(r rowScanner) (c candidate, err error) {
			return c, r.Scan(&c.id, &c.wakeups)
		})
		if err != nil {
			return err
		}
		var stall []int64
		wake := make(map[int][]int64) // by current wake-up count
		for _, c := range cands {
			if c.wakeups >= p.MaxDispatches {
				stall = append(stall, c.id)
			} else {
				wake[c.wakeups] = append(wake[c.wakeups], c.id)
			}
		}
		if len(stall) > 0 {
			cond, arg := s.idList("id", stall)
			rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'stalled',
					next_attempt_at = NULL, next_wakeup_at = NULL, last_error = ?, updated_at = ?
				WHERE `+cond+` AND state IN ('queued', 'retrying')
				RETURNING `+transitionCols, stallReason, s.tv(now), arg)
			if stalled, err = t.recordTransitions(rows, err, stallReason); err != nil {
				return fmt.Errorf("stall deliveries: %w", err)
			}
		}
		for _, n := range slices.Sorted(maps.Keys(wake)) {
			cond, arg := s.idList("id", wake[n])
			rows, err := t.query(ctx, `UPDATE deliveries SET wakeups = wakeups + 1, next_wakeup_at = ?
				WHERE `+cond+` AND wakeups = ? AND state IN ('queued', 'retrying')
				RETURNING `+deliveryCols, s.tv(now.Add(p.Backoff(n+1))), arg, n)
			ds, err := collect(rows, err, scanDelivery)
			if err != nil {
				return fmt.Errorf("wake deliveries: %w", err)
			}
			woken = append(woken, ds...)
		}
		slices.SortFunc(woken, func(a, b persistence.Delivery) int { return cmp.Compare(a.ID, b.ID) })
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wake due deliveries: %w", err)
	}
	return woken, stalled, nil
}

// ExpireAcks fails deliveries whose receipt or completion report did not come before its
// deadline; the reason names the reference the target answered with, when it gave one.
func (s *Store) ExpireAcks(ctx context.Context, now time.Time, limit int) ([]persistence.Delivery, error) {
	now = utc(now)
	var out []persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `WITH picked AS MATERIALIZED (
				SELECT d.id FROM deliveries d
				WHERE d.state = 'awaiting_ack' AND d.ack_deadline < ?
				ORDER BY d.ack_deadline, d.id LIMIT ?`+s.skipLocked+`
			)
			UPDATE deliveries SET previous_state = state, state = 'failed', ack_deadline = NULL,
				last_error = CASE WHEN external_ref = '' THEN CAST(? AS TEXT)
					ELSE CAST(? AS TEXT) || external_ref || CAST(? AS TEXT) END,
				updated_at = ?, error_class = 'timeout'
			WHERE id IN (SELECT id FROM picked) AND state = 'awaiting_ack'
			RETURNING `+transitionCols,
			s.tv(now), sweepLimit(limit), ackExpiredReason, ackExpiredRefPrefix, ackExpiredRefSuffix, s.tv(now))
		trs, err := collect(rows, err, scanTransition)
		if err != nil {
			return err
		}
		sortTransitions(trs)
		for _, tr := range trs {
			t.changed(tr, tr.d.LastError, "", time.Time{})
		}
		out = deliveriesOf(trs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire receipts: %w", err)
	}
	return out, nil
}
