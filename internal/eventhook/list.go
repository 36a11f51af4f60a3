package eventhook

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"wharf/internal/events"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Deliveries returns a page of a subscription's delivery log, newest first, and the
// count of rows the filter matches.
func (rt *Runtime) Deliveries(ctx context.Context, name persistence.InstanceName, state events.WebhookState, limit, offset int) ([]events.WebhookDelivery, int, error) {
	if err := rt.exists(ctx, name); err != nil {
		return nil, 0, err
	}
	cond, args := ` WHERE instance = ?`, []any{string(name)}
	if state != "" {
		cond, args = cond+` AND state = ?`, append(args, string(state))
	}
	out := []events.WebhookDelivery{}
	var total int
	err := rt.db.Read(ctx, func(tx module.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM event_webhook_deliveries`+cond, args...).Scan(&total); err != nil {
			return fmt.Errorf("count event webhook rows: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT id, event_id, type, message_id, state, attempts, next_attempt_at, last_error, created_at, updated_at
			FROM event_webhook_deliveries`+cond+` ORDER BY id DESC LIMIT ? OFFSET ?`, append(args, limit, offset)...)
		if err != nil {
			return fmt.Errorf("read event webhook rows: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var d events.WebhookDelivery
			var event, message sql.NullInt64
			var next time.Time
			if err := rows.Scan(&d.ID, &event, &d.Type, &message, &d.State, &d.Attempts, tx.ScanTime(&next), &d.LastError,
				tx.ScanTime(&d.CreatedAt), tx.ScanTime(&d.UpdatedAt)); err != nil {
				return fmt.Errorf("read event webhook row: %w", err)
			}
			if event.Valid {
				d.EventID = &event.Int64
			}
			if message.Valid {
				d.MessageID = &message.Int64
			}
			d.NextAttemptAt = timePtr(next)
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}
