package db

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// checkDownstream refuses a report the history could not read back as written.
func checkDownstream(r persistence.DownstreamReport) error {
	if _, err := persistence.ParseDownstreamStatus(r.Status); err != nil {
		return fieldMsg("status", "%v", err)
	}
	if r.Reporter == "" {
		return fieldMsg("reporter", "is empty")
	}
	return nil
}

// noteDownstream appends a downstream status line for a delivery.
func (t *txn) noteDownstream(r persistence.DownstreamReport) {
	t.note(historyRow{messageID: r.MessageID, deliveryID: r.DeliveryID, kind: persistence.HistoryDownstreamStatus,
		to: r.Status, reason: r.Reason, actor: r.Reporter, reportedAt: r.ReportedAt})
}

// applyDownstream records a report about the delivery read in cur and lets a terminal
// status settle it like any receipt: a failure fails a delivery that is delivering,
// awaiting_ack or retrying, a success delivers it. A delivery in any other state keeps
// it (a receipt never downgrades, the first failure's reason stands); the report is
// history all the same, since it is what the receiving side said.
func (t *txn) applyDownstream(ctx context.Context, cur persistence.Delivery, r persistence.DownstreamReport) (persistence.Delivery, error) {
	r.MessageID, r.DeliveryID = cur.MessageID, cur.ID
	t.noteDownstream(r)
	if !persistence.DownstreamTerminal(r.Status) {
		return cur, nil
	}
	switch cur.State {
	case persistence.DeliveryDelivering, persistence.DeliveryAwaitingAck, persistence.DeliveryRetrying:
	default:
		return cur, nil
	}
	delivered := !persistence.DownstreamFailure(r.Status)
	reason := r.Reason
	if reason == "" {
		reason = r.Status
	}
	tr, err := t.settleTo(ctx, cur, delivered, reason)
	if err != nil {
		return cur, err
	}
	t.changed(tr, downstreamReason(r), r.Reporter, time.Time{})
	return tr.d, nil
}

// downstreamReason is the delivery's history line of a settlement by a report.
func downstreamReason(r persistence.DownstreamReport) string {
	if r.Reason == "" {
		return "reported " + r.Status
	}
	return "reported " + r.Status + ": " + r.Reason
}

// SettleReceipt records what the receiving side said about a delivery (an AS2 MDN) as a
// downstream status line and, for a terminal status, settles the delivery as
// applyDownstream does, in one transaction. It returns the delivery as it is after.
func (s *Store) SettleReceipt(ctx context.Context, r persistence.DownstreamReport) (persistence.Delivery, error) {
	if err := checkDownstream(r); err != nil {
		return persistence.Delivery{}, fmt.Errorf("settle receipt of delivery %d: %w", r.DeliveryID, err)
	}
	var out persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(r.Reporter)
		cur, err := t.lockDelivery(ctx, r.DeliveryID)
		if err != nil {
			return err
		}
		out, err = t.applyDownstream(ctx, cur, r)
		if err != nil {
			return err
		}
		if r.Pause != "" && cur.State != out.State && out.State == persistence.DeliveryFailed {
			return t.pauseRefused(ctx, out, r.Pause)
		}
		return nil
	})
	if err != nil {
		return persistence.Delivery{}, fmt.Errorf("settle receipt of delivery %d: %w", r.DeliveryID, err)
	}
	return out, nil
}

// addDownstream records the downstream statuses attempts brought back (a synchronous
// MDN), whether or not their claims held: what the partner said stays said.
func (t *txn) addDownstream(cs []persistence.Completion) {
	for _, c := range cs {
		for _, r := range c.Downstream {
			t.noteDownstream(r)
		}
	}
}
