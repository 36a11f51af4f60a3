// Package rowqueue is a delivery.Queue over a module's own table, for targets whose work
// is rows of that table rather than message deliveries (the notifier's notifications,
// the event webhooks' events). The table has the columns id, instance, state (queued,
// delivering, retrying, delivered, failed, or others the queue leaves alone), attempts,
// next_attempt_at, lease_until, claim_token, last_error, created_at and updated_at; the
// delivery engine's worker of an instance claims its due rows, renews, completes and
// releases them like deliveries, each step conditional on the claim token.
package rowqueue

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Queue is the rows of Table.
type Queue struct {
	DB module.SQL
	// Table names the table; a constant of the module, never input.
	Table string
	// OnOutcomes, when set, runs in the transaction that recorded outcomes with the
	// completions that took effect; the func it returns runs after the commit.
	OnOutcomes func(ctx context.Context, tx module.Tx, done []persistence.Completion) (after func(), err error)
	// Announce, when set, is told the ids of the rows an outcome changed, after the commit.
	Announce func(ids []int64)
}

var _ delivery.Queue = (*Queue)(nil)

func (q *Queue) lockSuffix() string {
	if q.DB.Dialect() == "postgres" {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// ClaimDeliveries claims up to n rows of the instance that are due: queued, retrying
// past their time, or delivering with a lease that ran out. The claim is a Delivery
// whose ID is the row's; the Message is zero.
func (q *Queue) ClaimDeliveries(ctx context.Context, target persistence.InstanceName, n int, lease time.Duration, now time.Time) ([]persistence.Claim, error) {
	var out []persistence.Claim
	err := q.DB.Write(ctx, func(tx module.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT id FROM `+q.Table+` WHERE instance = ? AND (state = 'queued'
			OR (state = 'retrying' AND next_attempt_at <= ?) OR (state = 'delivering' AND lease_until <= ?))
			ORDER BY id LIMIT ?`+q.lockSuffix(), string(target), tx.Time(now), tx.Time(now), n)
		if err != nil {
			return fmt.Errorf("find due rows of %s: %w", q.Table, err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		prefix := token()
		for _, id := range ids {
			tok := prefix + strconv.FormatInt(id, 10)
			var attempts int
			var created time.Time
			err := tx.QueryRow(ctx, `UPDATE `+q.Table+` SET state = 'delivering', claim_token = ?, lease_until = ?,
				attempts = attempts + 1, updated_at = ? WHERE id = ? AND state IN ('queued', 'retrying', 'delivering')
				RETURNING attempts, created_at`, tok, tx.Time(now.Add(lease)), tx.Time(now), id).Scan(&attempts, tx.ScanTime(&created))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("claim %s row %d: %w", q.Table, id, err)
			}
			out = append(out, persistence.Claim{Delivery: persistence.Delivery{
				ID: id, Target: target, State: persistence.DeliveryDelivering, Attempts: attempts, ClaimToken: tok, CreatedAt: created,
			}})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s of %s: %w", q.Table, target, err)
	}
	return out, nil
}

func token() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-"
}

// RenewLease extends a claim; ErrLostClaim when the token no longer holds it.
func (q *Queue) RenewLease(ctx context.Context, id int64, tok string, until time.Time) error {
	return q.DB.Write(ctx, func(tx module.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE `+q.Table+` SET lease_until = ? WHERE id = ? AND claim_token = ? AND state = 'delivering'`,
			tx.Time(until), id, tok)
		if err != nil {
			return fmt.Errorf("renew %s row %d: %w", q.Table, id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return persistence.ErrLostClaim
		}
		return nil
	})
}

// CompleteDeliveries records outcomes, each conditional on its claim.
func (q *Queue) CompleteDeliveries(ctx context.Context, cs []persistence.Completion) ([]error, error) {
	results := make([]error, len(cs))
	var after func()
	err := q.DB.Write(ctx, func(tx module.Tx) error {
		after = nil
		var done []persistence.Completion
		for i, c := range cs {
			results[i] = nil
			if c.Token == "" {
				continue // stages of a lost claim; these rows store none
			}
			at := c.At
			if at.IsZero() {
				at = tx.Now()
			}
			var state string
			var next any
			switch c.Kind {
			case persistence.OutcomeDelivered:
				state = "delivered"
			case persistence.OutcomeRetry:
				state, next = "retrying", tx.Time(c.NextAttemptAt)
			default:
				state = "failed"
			}
			res, err := tx.Exec(ctx, `UPDATE `+q.Table+` SET state = ?, next_attempt_at = ?, lease_until = NULL, claim_token = '',
				last_error = ?, updated_at = ? WHERE id = ? AND claim_token = ? AND state = 'delivering'`,
				state, next, persistence.SanitizeReason(c.Reason), tx.Time(at), c.DeliveryID, c.Token)
			if err != nil {
				return fmt.Errorf("record %s row %d: %w", q.Table, c.DeliveryID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				results[i] = fmt.Errorf("%s row %d: %w", q.Table, c.DeliveryID, persistence.ErrLostClaim)
				continue
			}
			done = append(done, c)
		}
		if q.OnOutcomes == nil || len(done) == 0 {
			return nil
		}
		var err error
		after, err = q.OnOutcomes(ctx, tx, done)
		return err
	})
	if err != nil {
		return nil, err
	}
	if after != nil {
		after()
	}
	if q.Announce != nil {
		var ids []int64
		for i, c := range cs {
			if results[i] == nil && c.Token != "" {
				ids = append(ids, c.DeliveryID)
			}
		}
		q.Announce(ids)
	}
	return results, nil
}

// ReleaseDeliveries hands interrupted claims back, due at once and not counted.
func (q *Queue) ReleaseDeliveries(ctx context.Context, rs []persistence.Release) error {
	return q.DB.Write(ctx, func(tx module.Tx) error {
		for _, r := range rs {
			if _, err := tx.Exec(ctx, `UPDATE `+q.Table+` SET state = 'queued', attempts = attempts - 1, lease_until = NULL,
				claim_token = '', updated_at = ? WHERE id = ? AND claim_token = ? AND state = 'delivering'`,
				tx.Time(tx.Now()), r.DeliveryID, r.Token); err != nil {
				return fmt.Errorf("release %s row %d: %w", q.Table, r.DeliveryID, err)
			}
		}
		return nil
	})
}
