package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// traceQuery reads a whole trace in one statement: the matching messages (one more than
// the cap, to tell a truncated trace), their deliveries and their history. The history
// part carries its time range — from the earliest matching message's creation — so a
// history table kept in time partitions reads only the partitions that can hold it.
//
// The three parts share one row shape, aligned by type: rk tells which part a row is,
// t1…t4 are times, n1 a number, s1…s10 texts (see traceRow).
const traceQuery = `WITH m AS (
		SELECT id, created_at FROM messages WHERE %s = ? ORDER BY id LIMIT ?
	)
	SELECT 0 AS rk, x.id, x.id AS message_id, NULL AS delivery_id, x.created_at AS t1, x.updated_at AS t2,
		x.erased_at AS t3, NULL AS t4, x.size AS n1, x.stage AS s1, x.status AS s2, x.from_party AS s3, x.to_party AS s4,
		x.source AS s5, x.original_file_name AS s6, x.correlation_id AS s7, x.origin_event_id AS s8, x.sha256 AS s9,
		x.metadata AS s10
	FROM messages x JOIN m ON m.id = x.id
	UNION ALL
	SELECT 1, d.id, d.message_id, d.id, d.created_at, d.updated_at, d.next_attempt_at, d.ack_deadline, d.attempts,
		d.target, d.state, d.last_error, d.session_key, d.external_ref, d.error_class, d.correlation_id,
		d.origin_event_id, '', ''
	FROM deliveries d JOIN m ON m.id = d.message_id
	UNION ALL
	SELECT 2, h.id, h.message_id, h.delivery_id, h.at, h.reported_at, NULL, NULL, 0,
		h.kind, h.from_state, h.to_state, h.reason, h.actor, '', h.correlation_id, h.origin_event_id, '', ''
	FROM message_history h JOIN m ON m.id = h.message_id
	WHERE h.at >= (SELECT MIN(created_at) FROM m)
	ORDER BY 1, 3, 2`

// traceRow is one row of traceQuery.
type traceRow struct {
	kind, id, messageID int64
	deliveryID          sql.NullInt64
	t1                  time.Time
	t2, t3, t4          *time.Time
	n1                  int64
	s                   [10]string
}

func scanTraceRow(r rowScanner) (traceRow, error) {
	var x traceRow
	dests := []any{&x.kind, &x.id, &x.messageID, &x.deliveryID, timeCol{&x.t1}, nullTimeCol{&x.t2}, nullTimeCol{&x.t3},
		nullTimeCol{&x.t4}, &x.n1}
	for i := range x.s {
		dests = append(dests, &x.s[i])
	}
	if err := r.Scan(dests...); err != nil {
		return x, fmt.Errorf("read trace row: %w", err)
	}
	return x, nil
}

// Trace returns every message with the origin event id or correlation id q names (at most
// persistence.MaxTraceMessages, the first by id), each with its deliveries and its whole
// history, read in one statement.
func (s *Store) Trace(ctx context.Context, q persistence.TraceQuery) (persistence.Trace, error) {
	if err := q.Check(); err != nil {
		return persistence.Trace{}, fmt.Errorf("trace: %w", err)
	}
	col, val := "origin_event_id", q.OriginEventID
	if q.CorrelationID != "" {
		col, val = "correlation_id", q.CorrelationID
	}
	var rows []traceRow
	err := s.read(ctx, func(t *txn) error {
		rs, err := t.query(ctx, fmt.Sprintf(traceQuery, col), val, persistence.MaxTraceMessages+1)
		rows, err = collect(rs, err, scanTraceRow)
		return err
	})
	if err != nil {
		return persistence.Trace{}, fmt.Errorf("trace %s: %w", q, err)
	}
	out, err := assembleTrace(rows)
	if err != nil {
		return out, err
	}
	// What retention pruned of the traced messages, read after: a pruned message's
	// trace says what is missing from it.
	ids := make([]int64, len(out.Messages))
	for i, m := range out.Messages {
		ids[i] = m.ID
	}
	pruned, err := s.PrunedFor(ctx, ids)
	if err != nil {
		return out, fmt.Errorf("trace %s: %w", q, err)
	}
	for i := range out.Messages {
		if p, ok := pruned[out.Messages[i].ID]; ok {
			out.Messages[i].Pruned = &p
		}
	}
	return out, nil
}

// assembleTrace builds the trace from its rows, which come messages first, then
// deliveries, then history, each in message then id order.
func assembleTrace(rows []traceRow) (persistence.Trace, error) {
	out := persistence.Trace{Messages: []persistence.TracedMessage{}}
	at := make(map[int64]int)
	for _, x := range rows {
		if x.kind != 0 {
			continue
		}
		if len(out.Messages) == persistence.MaxTraceMessages {
			out.Truncated = true
			break
		}
		m, err := x.message()
		if err != nil {
			return out, err
		}
		at[m.ID] = len(out.Messages)
		out.Messages = append(out.Messages, persistence.TracedMessage{Message: m,
			Deliveries: []persistence.Delivery{}, History: []persistence.HistoryEntry{}})
	}
	for _, x := range rows {
		i, ok := at[x.messageID]
		if !ok {
			continue // the message past the cap
		}
		tm := &out.Messages[i]
		switch x.kind {
		case 1:
			tm.Deliveries = append(tm.Deliveries, x.delivery())
		case 2:
			tm.History = append(tm.History, x.history())
		}
	}
	for i := range out.Messages {
		tm := &out.Messages[i]
		persistence.AttachDownstream(tm.Deliveries, tm.History)
	}
	return out, nil
}

func (x traceRow) message() (persistence.Message, error) {
	m := persistence.Message{ID: x.id, CreatedAt: x.t1, Size: x.n1,
		Stage: persistence.MessageStage(x.s[0]), Status: persistence.MessageStatus(x.s[1]),
		From: persistence.PartyName(x.s[2]), To: persistence.PartyName(x.s[3]), Source: persistence.InstanceName(x.s[4]),
		OriginalFileName: persistence.FileName(x.s[5]), CorrelationID: x.s[6], OriginEventID: x.s[7], SHA256: x.s[8]}
	if x.t2 != nil {
		m.UpdatedAt = *x.t2
	}
	m.ErasedAt = x.t3
	var err error
	if m.Metadata, err = decodeMetadata(x.s[9]); err != nil {
		return m, fmt.Errorf("read message %d: %w", m.ID, err)
	}
	return m, nil
}

func (x traceRow) delivery() persistence.Delivery {
	d := persistence.Delivery{ID: x.id, MessageID: x.messageID, CreatedAt: x.t1, NextAttemptAt: x.t3, AckDeadline: x.t4,
		Attempts: int(x.n1), Target: persistence.InstanceName(x.s[0]), State: persistence.DeliveryState(x.s[1]),
		LastError: x.s[2], SessionKey: x.s[3], ExternalRef: x.s[4], ErrorClass: x.s[5], CorrelationID: x.s[6], OriginEventID: x.s[7]}
	if x.t2 != nil {
		d.UpdatedAt = *x.t2
	}
	return d
}

func (x traceRow) history() persistence.HistoryEntry {
	h := persistence.HistoryEntry{ID: x.id, MessageID: x.messageID, At: x.t1, Kind: persistence.HistoryKind(x.s[0]),
		FromState: x.s[1], ToState: x.s[2], Reason: x.s[3], Actor: x.s[4], CorrelationID: x.s[6], OriginEventID: x.s[7],
		ReportedAt: x.t2}
	if x.deliveryID.Valid {
		id := x.deliveryID.Int64
		h.DeliveryID = &id
	}
	return h
}
