package db

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// SettleDelivery applies a receipt to a delivery that is delivering, awaiting_ack or
// retrying. A delivery already delivered, failed or skipped is returned as it is: a
// receipt never downgrades or reopens, and the first failure's reason stands.
func (s *Store) SettleDelivery(ctx context.Context, deliveryID int64, delivered bool, reason, actor string) (persistence.Delivery, error) {
	return s.settleDelivery(ctx, deliveryID, delivered, reason, "", actor)
}

// RefuseDeliveryPausing is SettleDelivery of a refusal that pauses the partner: when the
// receipt fails the delivery, the partner is paused with pause as the reason in the same
// transaction (pause.go).
func (s *Store) RefuseDeliveryPausing(ctx context.Context, deliveryID int64, reason, pause, actor string) (persistence.Delivery, error) {
	return s.settleDelivery(ctx, deliveryID, false, reason, pause, actor)
}

func (s *Store) settleDelivery(ctx context.Context, deliveryID int64, delivered bool, reason, pause, actor string) (persistence.Delivery, error) {
	var out persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(actor)
		cur, err := t.lockDelivery(ctx, deliveryID)
		if err != nil {
			return err
		}
		switch cur.State {
		case persistence.DeliveryDelivered, persistence.DeliveryFailed, persistence.DeliverySkipped:
			out = cur
			return nil
		case persistence.DeliveryDelivering, persistence.DeliveryAwaitingAck, persistence.DeliveryRetrying:
		default:
			return fmt.Errorf("delivery %d is %s and awaits no receipt: %w", deliveryID, cur.State, persistence.ErrConflict)
		}
		kind := persistence.HistoryReceiptReceived
		if !delivered {
			kind = persistence.HistoryReceiptRefused
		}
		tr, err := t.settleTo(ctx, cur, delivered, reason)
		if err != nil {
			return err
		}
		t.note(historyRow{messageID: cur.MessageID, deliveryID: deliveryID, kind: kind,
			from: string(cur.State), to: string(tr.d.State), reason: persistence.SanitizeReason(reason), actor: t.actor})
		t.changed(tr, reason, t.actor, time.Time{})
		out = tr.d
		if pause != "" && tr.d.State == persistence.DeliveryFailed {
			return t.pauseRefused(ctx, tr.d, pause)
		}
		return nil
	})
	if err != nil {
		return persistence.Delivery{}, fmt.Errorf("settle delivery %d: %w", deliveryID, err)
	}
	return out, nil
}

// lockDelivery reads a delivery for a settlement, locking its row on PostgreSQL.
func (t *txn) lockDelivery(ctx context.Context, deliveryID int64) (persistence.Delivery, error) {
	d, err := scanDelivery(t.queryRow(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE id = ?`+t.s.lockRows, deliveryID))
	if err != nil {
		return d, notFound(err, "delivery %d", deliveryID)
	}
	return d, nil
}

// settleTo moves a delivery read in cur to delivered, or to failed with reason as its
// last error, on the condition that it is still in cur's state; it clears any claim and
// deadline. The caller records the transition (t.changed) like every other.
func (t *txn) settleTo(ctx context.Context, cur persistence.Delivery, delivered bool, reason string) (transition, error) {
	to, lastError, errorClass := persistence.DeliveryDelivered, "", ""
	if !delivered {
		// A refusal by whoever received the document: a partner's negative receipt, or
		// an in-house system's failure report.
		to, lastError = persistence.DeliveryFailed, persistence.SanitizeReason(reason)
		errorClass = string(retry.ClassRefused)
	}
	rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, state = ?,
			claim_token = '', lease_until = NULL, ack_deadline = NULL, last_error = ?, updated_at = ?,
			error_class = ?
		WHERE id = ? AND state = ?
		RETURNING `+transitionCols, string(to), lastError, t.s.tv(t.now), errorClass, cur.ID, string(cur.State))
	trs, err := collect(rows, err, scanTransition)
	if err != nil {
		return transition{}, err
	}
	if len(trs) == 0 {
		return transition{}, fmt.Errorf("delivery %d changed while it was settled: %w", cur.ID, persistence.ErrConflict)
	}
	return trs[0], nil
}
