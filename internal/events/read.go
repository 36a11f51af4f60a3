package events

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// selectRows reads history rows with their message's parties and correlation ids; the
// delivery's target and session come from a left join (a message's own lines have none).
const selectRows = `SELECT h.id, h.message_id, h.delivery_id, h.at, h.kind, h.from_state, h.to_state, h.actor,
	COALESCE(d.target, ''), COALESCE(d.session_key, ''), m.from_party, m.to_party, m.source, m.correlation_id, m.origin_event_id
	FROM message_history h JOIN messages m ON m.id = h.message_id LEFT JOIN deliveries d ON d.id = h.delivery_id`

// ReadAfter reads up to limit history rows with ids above after, in id order.
func ReadAfter(ctx context.Context, tx module.Tx, after int64, limit int) ([]Row, error) {
	rows, err := tx.Query(ctx, selectRows+` WHERE h.id > ? ORDER BY h.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read history after %d: %w", after, err)
	}
	return scanRows(tx, rows)
}

// LastID is the id of the newest history row, 0 when there is none.
func LastID(ctx context.Context, tx module.Tx) (int64, error) {
	var id sql.NullInt64
	if err := tx.QueryRow(ctx, `SELECT MAX(id) FROM message_history`).Scan(&id); err != nil {
		return 0, fmt.Errorf("read the newest history id: %w", err)
	}
	return id.Int64, nil
}

func scanRows(tx module.Tx, rows *sql.Rows) ([]Row, error) {
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		var delivery sql.NullInt64
		var kind string
		if err := rows.Scan(&r.ID, &r.MessageID, &delivery, tx.ScanTime(&r.At), &kind, &r.FromState, &r.ToState, &r.Actor,
			&r.Target, &r.SessionKey, &r.From, &r.To, &r.Source, &r.CorrelationID, &r.OriginEventID); err != nil {
			return nil, fmt.Errorf("read history row: %w", err)
		}
		if delivery.Valid {
			id := delivery.Int64
			r.DeliveryID = &id
		}
		r.Kind = persistence.HistoryKind(kind)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read history rows: %w", err)
	}
	return out, nil
}

// Contiguous returns the prefix of rows (read in id order after last) that may be
// passed on now, and when the gap that stopped it was first seen. History ids are handed
// out when a row is inserted, not when its transaction commits: on PostgreSQL a row with
// a lower id may still appear after a higher one is visible. A reader therefore stops at
// a missing id and waits up to grace for it; an id still missing after that belonged to
// a transaction that rolled back, and the reader moves past it.
func Contiguous(last int64, rows []Row, gapSince, now time.Time, grace time.Duration) (take []Row, since time.Time) {
	next := last + 1
	for i, r := range rows {
		if r.ID != next && last > 0 {
			if gapSince.IsZero() {
				return rows[:i], now
			}
			if now.Sub(gapSince) < grace {
				return rows[:i], gapSince
			}
			gapSince = time.Time{}
		}
		next = r.ID + 1
		last = r.ID
		if i == len(rows)-1 {
			return rows, time.Time{}
		}
	}
	return rows, gapSince
}
