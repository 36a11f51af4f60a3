package eventhook

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/events"
	"wharf/internal/module"
)

// Pass turns the history rows after the cursor into event rows, one per subscription
// that selects the event, and moves the cursor, all in one transaction: a crash before
// the commit leaves the rows to the next pass, and the commit queues each event once.
// The cursor row is locked for the pass, so passes of several processes take turns.
// more reports a full batch.
func (rt *Runtime) Pass(ctx context.Context) (more bool, err error) {
	subs, err := rt.subscriptions(ctx)
	if err != nil {
		return false, err
	}
	if len(subs) == 0 {
		return false, rt.skipAll(ctx)
	}
	now := rt.clock()
	var woken []string
	err = rt.db.Write(ctx, func(tx module.Tx) error {
		woken, more = woken[:0], false
		lock := ""
		if rt.db.Dialect() == "postgres" {
			lock = " FOR UPDATE"
		}
		var last int64
		var gapSince time.Time
		if err := tx.QueryRow(ctx, `SELECT last_id, gap_since FROM event_cursor WHERE name = 'webhooks'`+lock).
			Scan(&last, tx.ScanTime(&gapSince)); err != nil {
			return fmt.Errorf("read the event cursor: %w", err)
		}
		rows, err := events.ReadAfter(ctx, tx, last, outboxBatch)
		if err != nil {
			return err
		}
		take, since := events.Contiguous(last, rows, gapSince, now, OutboxGrace)
		if len(take) == 0 && since.Equal(gapSince) {
			return nil // nothing to move: an idle pass writes nothing
		}
		for _, r := range take {
			e := events.FromRow(r)
			var body []byte
			for _, s := range subs {
				if !s.cfg.selects(e) {
					continue
				}
				if body == nil {
					body = e.Body()
				}
				if _, err := tx.Exec(ctx, `INSERT INTO event_webhook_deliveries (instance, event_id, type, message_id, body,
					state, attempts, claim_token, last_error, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, 'queued', 0, '', '', ?, ?) ON CONFLICT (instance, event_id) DO NOTHING`,
					s.name, r.ID, string(e.Type), r.MessageID, string(body), tx.Time(now), tx.Time(now)); err != nil {
					return fmt.Errorf("queue event %d for %s: %w", r.ID, s.name, err)
				}
				woken = append(woken, s.name)
			}
			last = r.ID
		}
		var gap any
		if !since.IsZero() {
			gap = tx.Time(since)
		}
		if _, err := tx.Exec(ctx, `UPDATE event_cursor SET last_id = ?, gap_since = ? WHERE name = 'webhooks'`, last, gap); err != nil {
			return fmt.Errorf("move the event cursor: %w", err)
		}
		more = len(rows) == outboxBatch && len(take) == len(rows)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("event outbox: %w", err)
	}
	rt.wakeInstances(woken)
	return more, nil
}

// Retain deletes finished rows of the delivery log older than RetentionAge.
func (rt *Runtime) Retain(ctx context.Context) (int64, error) {
	var n int64
	err := rt.db.Write(ctx, func(tx module.Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM event_webhook_deliveries WHERE created_at < ? AND state IN ('delivered', 'failed')`,
			tx.Time(rt.clock().Add(-RetentionAge)))
		if err != nil {
			return fmt.Errorf("delete old event webhook rows: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}

// skipAll moves the cursor past the newest history row without reading the rows: with no
// enabled subscription no event is queued, and a subscription made later starts from the
// transitions after it. One statement reads the newest id and moves the cursor; it writes
// only when the cursor moves.
func (rt *Runtime) skipAll(ctx context.Context) error {
	err := rt.db.Write(ctx, func(tx module.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE event_cursor SET last_id = (SELECT MAX(id) FROM message_history), gap_since = NULL
			WHERE name = 'webhooks' AND last_id < (SELECT MAX(id) FROM message_history)`); err != nil {
			return fmt.Errorf("move the event cursor: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("event outbox: %w", err)
	}
	return nil
}
