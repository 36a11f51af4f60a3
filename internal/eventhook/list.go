package eventhook

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// State is where a row of the delivery log stands.
type State string

// The states of a row.
const (
	StateQueued     State = "queued"
	StateDelivering State = "delivering"
	StateRetrying   State = "retrying"
	StateDelivered  State = "delivered"
	StateFailed     State = "failed"
)

// AllStates lists the states.
var AllStates = []State{StateQueued, StateDelivering, StateRetrying, StateDelivered, StateFailed}

// ParseState parses a state name.
func ParseState(s string) (State, error) {
	if slices.Contains(AllStates, State(s)) {
		return State(s), nil
	}
	return "", fmt.Errorf("invalid state %q: want queued, delivering, retrying, delivered or failed", s)
}

// Delivery is one row of a subscription's delivery log.
type Delivery struct {
	ID            int64      `json:"id"`
	EventID       *int64     `json:"event_id"`
	Type          string     `json:"type"`
	MessageID     *int64     `json:"message_id"`
	State         State      `json:"state"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	LastError     string     `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// Deliveries returns a page of a subscription's delivery log, newest first, and the
// count of rows the filter matches.
func (rt *Runtime) Deliveries(ctx context.Context, name persistence.InstanceName, state State, limit, offset int) ([]Delivery, int, error) {
	if err := rt.exists(ctx, name); err != nil {
		return nil, 0, err
	}
	cond, args := ` WHERE instance = ?`, []any{string(name)}
	if state != "" {
		cond, args = cond+` AND state = ?`, append(args, string(state))
	}
	out := []Delivery{}
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
			var d Delivery
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
