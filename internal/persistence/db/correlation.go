package db

import (
	"context"
	"fmt"
)

// Deliveries copy their message's correlation and origin event ids when they are made.
const (
	deliveryInsert = `INSERT INTO deliveries (message_id, target, state, next_attempt_at, next_wakeup_at, session_key,
		created_at, updated_at, retry_policy, correlation_id, origin_event_id)`
	deliveryInsertCols = 11
)

// messageRefs are a message's correlation and origin event ids.
type messageRefs struct {
	correlationID, originEventID string
}

// knowIDs notes the ids of a message the transaction read or inserted, so its history
// lines carry them without reading the message again.
func (t *txn) knowIDs(messageID int64, correlationID, originEventID string) {
	if t.refs == nil {
		t.refs = make(map[int64]messageRefs)
	}
	t.refs[messageID] = messageRefs{correlationID, originEventID}
}

// readRefs reads the ids of the messages of pending history lines that the transaction
// has not seen yet, in one statement. Every history line is written with its message's
// ids: this is the one place that fills them.
func (t *txn) readRefs(ctx context.Context) error {
	var missing []int64
	for _, h := range t.hist {
		if _, ok := t.refs[h.messageID]; !ok {
			missing = append(missing, h.messageID)
			t.knowIDs(h.messageID, "", "") // asked once, even with many lines
		}
	}
	if len(missing) == 0 {
		return nil
	}
	cond, arg := t.s.idList("id", missing)
	rows, err := t.query(ctx, `SELECT id, correlation_id, origin_event_id FROM messages WHERE `+cond, arg)
	if err != nil {
		return fmt.Errorf("read correlation ids: %w", err)
	}
	for rows.Next() {
		var id int64
		var r messageRefs
		if err := rows.Scan(&id, &r.correlationID, &r.originEventID); err != nil {
			rows.Close()
			return fmt.Errorf("read correlation ids: %w", err)
		}
		t.refs[id] = r
	}
	return closeRows(rows)
}
