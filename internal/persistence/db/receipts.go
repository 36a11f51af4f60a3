package db

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// SettleDelivery applies a receipt to a delivery that is delivering, awaiting_ack or
// retrying. A delivery already delivered or failed is returned as it is: a receipt never
// downgrades, and the first failure's reason stands.
func (s *Store) SettleDelivery(ctx context.Context, deliveryID int64, delivered bool, reason, actor string) (persistence.Delivery, error) {
	var out persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(actor)
		var state persistence.DeliveryState
		var messageID int64
		err := t.queryRow(ctx, `SELECT state, message_id FROM deliveries WHERE id = ?`+s.lockRows, deliveryID).Scan(&state, &messageID)
		if err != nil {
			return notFound(err, "delivery %d", deliveryID)
		}
		switch state {
		case persistence.DeliveryDelivered, persistence.DeliveryFailed:
			out, err = scanDelivery(t.queryRow(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE id = ?`, deliveryID))
			return err
		case persistence.DeliveryDelivering, persistence.DeliveryAwaitingAck, persistence.DeliveryRetrying:
		default:
			return fmt.Errorf("delivery %d is %s and awaits no receipt: %w", deliveryID, state, persistence.ErrConflict)
		}
		kind, to, lastError, errorClass := persistence.HistoryReceiptReceived, persistence.DeliveryDelivered, "", ""
		if !delivered {
			kind, to, lastError = persistence.HistoryReceiptRefused, persistence.DeliveryFailed, persistence.SanitizeReason(reason)
			errorClass = string(retry.ClassRefused)
		}
		now := s.tv(t.now)
		rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, state = ?,
				claim_token = '', lease_until = NULL, ack_deadline = NULL, last_error = ?, updated_at = ?,
				error_class = ?
			WHERE id = ? AND state = ?
			RETURNING `+transitionCols, string(to), lastError, now, errorClass, deliveryID, string(state))
		trs, err := collect(rows, err, scanTransition)
		if err != nil {
			return err
		}
		if len(trs) == 0 {
			return fmt.Errorf("delivery %d changed while its receipt was applied: %w", deliveryID, persistence.ErrConflict)
		}
		t.note(historyRow{messageID: messageID, deliveryID: deliveryID, kind: kind,
			from: string(state), to: string(to), reason: persistence.SanitizeReason(reason), actor: t.actor})
		t.changed(trs[0], reason, t.actor, time.Time{})
		out = trs[0].d
		return nil
	})
	if err != nil {
		return persistence.Delivery{}, fmt.Errorf("settle delivery %d: %w", deliveryID, err)
	}
	return out, nil
}
