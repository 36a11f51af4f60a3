package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"wharf/internal/persistence"
)

// ApplyCallbacks applies verified status callbacks in one transaction, in the order
// given, and says what became of each. A callback whose (target, webhook-id) was applied
// before writes nothing (CallbackDuplicate); one that names no delivery of its target
// keeps only its webhook-id (CallbackUnmatched); the others write a downstream status
// line, and a terminal status settles the delivery (see applyDownstream).
func (s *Store) ApplyCallbacks(ctx context.Context, cbs []persistence.StatusCallback) ([]persistence.CallbackOutcome, error) {
	for i, cb := range cbs {
		if err := checkCallback(cb); err != nil {
			return nil, fmt.Errorf("apply status callbacks: callback %d: %w", i, err)
		}
	}
	var out []persistence.CallbackOutcome
	err := s.write(ctx, func(t *txn) error {
		out = make([]persistence.CallbackOutcome, len(cbs))
		for i, cb := range cbs {
			o, err := t.applyCallback(ctx, cb)
			if err != nil {
				return fmt.Errorf("callback %s to %s: %w", cb.WebhookID, cb.Target, err)
			}
			out[i] = o
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply status callbacks: %w", err)
	}
	return out, nil
}

func checkCallback(cb persistence.StatusCallback) error {
	if err := check("target", cb.Target, persistence.ParseInstanceName); err != nil {
		return err
	}
	if err := persistence.CheckWebhookID(cb.WebhookID); err != nil {
		return fieldErr("webhook_id", err)
	}
	return checkDownstream(callbackReport(cb))
}

// callbackReport is the downstream line of a callback; its detail follows its reason.
func callbackReport(cb persistence.StatusCallback) persistence.DownstreamReport {
	reason := cb.Reason
	switch {
	case cb.Detail != "" && reason != "":
		reason += " (" + cb.Detail + ")"
	case cb.Detail != "":
		reason = cb.Detail
	}
	return persistence.DownstreamReport{Status: cb.Status, Reason: reason,
		Reporter: persistence.DownstreamActorCallback(cb.Target), ReportedAt: cb.ReportedAt}
}

func (t *txn) applyCallback(ctx context.Context, cb persistence.StatusCallback) (persistence.CallbackOutcome, error) {
	cur, found, err := t.callbackDelivery(ctx, cb)
	if err != nil {
		return "", err
	}
	var did any
	if found {
		did = cur.ID
	}
	res, err := t.exec(ctx, `INSERT INTO status_callbacks (target, webhook_id, delivery_id, applied_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (target, webhook_id) DO NOTHING`, string(cb.Target), cb.WebhookID, did, t.s.tv(t.now))
	if err != nil {
		return "", fmt.Errorf("record webhook-id: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return "", err
	} else if n == 0 {
		return persistence.CallbackDuplicate, nil
	}
	if !found {
		return persistence.CallbackUnmatched, nil
	}
	t.actor = persistence.DownstreamActorCallback(cb.Target)
	if _, err := t.applyDownstream(ctx, cur, callbackReport(cb)); err != nil {
		return "", err
	}
	return persistence.CallbackApplied, nil
}

// callbackDelivery finds the delivery of the callback's target that it names, locking
// its row on PostgreSQL; found is false when there is none.
func (t *txn) callbackDelivery(ctx context.Context, cb persistence.StatusCallback) (persistence.Delivery, bool, error) {
	q, arg := `id = ?`, any(cb.DeliveryID)
	switch {
	case cb.MessageID != 0:
		q, arg = `message_id = ?`, cb.MessageID
	case cb.ExternalRef != "":
		q, arg = `external_ref = ?`, cb.ExternalRef
	}
	d, err := scanDelivery(t.queryRow(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE target = ? AND `+q+
		` ORDER BY id DESC LIMIT 1`+t.s.lockRows, string(cb.Target), arg))
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("find delivery: %w", err)
	}
	return d, true, nil
}
