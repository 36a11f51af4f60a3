package db

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// settledStates are final: a handoff report for one of them is ErrDeliverySettled.
var settledStates = map[persistence.DeliveryState]bool{
	persistence.DeliveryDelivered: true,
	persistence.DeliveryFailed:    true,
	persistence.DeliverySkipped:   true,
}

// SettleHandoff applies an in-house system's report to an awaiting_ack delivery in one
// transaction: the transition goes through the same path as every other (settleTo, then
// changed), so the message's status is derived again and a failure is a failure like any.
func (s *Store) SettleHandoff(ctx context.Context, r persistence.HandoffReport) (persistence.Delivery, error) {
	if !r.Completed && persistence.SanitizeReason(r.Text) == "" {
		return persistence.Delivery{}, fmt.Errorf("settle handoff of delivery %d: %w", r.DeliveryID, fieldMsg("reason", "is required"))
	}
	var out persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(r.Actor)
		cur, err := t.lockDelivery(ctx, r.DeliveryID)
		if err != nil {
			return err
		}
		switch {
		case settledStates[cur.State]:
			return fmt.Errorf("delivery %d is %s: %w", cur.ID, cur.State, persistence.ErrDeliverySettled)
		case cur.State != persistence.DeliveryAwaitingAck:
			return fmt.Errorf("delivery %d is %s: %w", cur.ID, cur.State, persistence.ErrDeliveryNotAwaiting)
		case r.Reference != "" && r.Reference != cur.ExternalRef:
			return fmt.Errorf("delivery %d: %w", cur.ID, persistence.ErrReferenceMismatch)
		}
		tr, err := t.settleTo(ctx, cur, r.Completed, r.Text)
		if err != nil {
			return err
		}
		t.changed(tr, handoffReason(r, cur.ExternalRef), t.actor, time.Time{})
		out = tr.d
		return nil
	})
	if err != nil {
		return persistence.Delivery{}, fmt.Errorf("settle handoff of delivery %d: %w", r.DeliveryID, err)
	}
	return out, nil
}

// handoffReason is the history line of a report: what was reported, for which reference,
// with the reporter's words.
func handoffReason(r persistence.HandoffReport, ref string) string {
	what := "completion reported"
	if !r.Completed {
		what = "failure reported"
	}
	if ref != "" {
		what += " for reference " + ref
	}
	if text := persistence.SanitizeReason(r.Text); text != "" {
		what += ": " + text
	}
	return what
}
