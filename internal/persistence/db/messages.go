package db

import (
	"time"

	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

const (
	maxIDBlock     = 100000
	maxPayloadKey  = 1024
	maxBatchTarget = 1000
)

// AllocateMessageIDs reserves n consecutive ids in one commit and returns the first, so a
// source can write a batch's blobs under their final ids before it inserts the rows.
func (s *Store) AllocateMessageIDs(ctx context.Context, n int) (int64, error) {
	if n <= 0 || n > maxIDBlock {
		return 0, fmt.Errorf("allocate message ids: count %d is not between 1 and %d", n, maxIDBlock)
	}
	var next int64
	err := s.write(ctx, func(t *txn) error {
		return t.queryRow(ctx, `UPDATE id_counters SET next_id = next_id + ? WHERE name = 'message' RETURNING next_id`, n).Scan(&next)
	})
	if err != nil {
		return 0, fmt.Errorf("allocate message ids: %w", err)
	}
	return next - int64(n), nil
}

// checkNewMessage validates one message to insert and fills in what the store decides:
// refusal class none by default, payload message ids, distinct targets.
func checkNewMessage(nm *persistence.NewMessage) error {
	m := &nm.Message
	if m.ID <= 0 {
		return fieldMsg("id", "must come from AllocateMessageIDs")
	}
	if m.Refusal == "" {
		m.Refusal = persistence.RefusalNone
	}
	for _, err := range []error{
		check("refusal", m.Refusal, persistence.ParseRefusal),
		check("from", m.From, persistence.ParsePartyName),
		check("to", m.To, persistence.ParsePartyName),
		check("source", m.Source, persistence.ParseInstanceName),
		check("original_file_name", m.OriginalFileName, persistence.ParseFileName),
		checkSHA256("sha256", m.SHA256, true),
		checkReference("correlation_id", m.CorrelationID),
		checkReference("origin_event_id", m.OriginEventID),
		checkTraceParent(m.TraceParent),
	} {
		if err != nil {
			return err
		}
	}
	if m.Size < 0 {
		return fieldMsg("size", "must not be negative")
	}
	meta, err := persistence.NormalizeMetadata(m.Metadata)
	if err != nil {
		return err
	}
	m.Metadata = meta
	if m.Refusal != persistence.RefusalNone && len(nm.Targets) > 0 {
		return fieldMsg("targets", "a refused message has no deliveries")
	}
	seen := make(map[persistence.PayloadStage]bool)
	for i := range nm.Payloads {
		p := &nm.Payloads[i]
		if p.MessageID == 0 {
			p.MessageID = m.ID
		}
		if err := checkPayload(*p); err != nil {
			return prefixField(fmt.Sprintf("payloads[%d].", i), err)
		}
		if p.MessageID != m.ID {
			return fieldMsg(fmt.Sprintf("payloads[%d].message_id", i), "is %d, not the message's id %d", p.MessageID, m.ID)
		}
		if seen[p.Stage] {
			return fieldMsg(fmt.Sprintf("payloads[%d].stage", i), "stage %s appears twice", p.Stage)
		}
		seen[p.Stage] = true
	}
	if !nm.Dispatch && len(nm.Targets) > 0 {
		return fieldMsg("targets", "given without dispatch")
	}
	targets := nm.Targets[:0:0]
	dup := make(map[persistence.InstanceName]bool)
	for i, tg := range nm.Targets {
		if err := check(fmt.Sprintf("targets[%d]", i), tg, persistence.ParseInstanceName); err != nil {
			return err
		}
		if !dup[tg] {
			dup[tg] = true
			targets = append(targets, tg)
		}
	}
	if len(targets) > maxBatchTarget {
		return fieldMsg("targets", "more than %d targets", maxBatchTarget)
	}
	nm.Targets = targets
	for tg, ses := range nm.Sessions {
		if !dup[tg] {
			return fieldMsg("sessions", "names target %q, which is not one of the targets", tg)
		}
		if err := checkSessionKey(ses.Key); err != nil {
			return prefixField("sessions."+string(tg)+".", err)
		}
	}
	return nil
}

func checkPayload(p persistence.Payload) error {
	if err := check("stage", p.Stage, persistence.ParsePayloadStage); err != nil {
		return err
	}
	if p.Key == "" {
		return fieldMsg("key", "is empty")
	}
	if err := checkText("key", p.Key, maxPayloadKey); err != nil {
		return err
	}
	if p.Size < 0 {
		return fieldMsg("size", "must not be negative")
	}
	return checkSHA256("sha256", p.SHA256, false)
}

// InsertMessages stores a batch of messages in one transaction with multi-row statements:
// message rows (stage accepted), payload records, the received line, and for those to
// dispatch their deliveries (queued, due now), the dispatched line and the derived stage
// and status. Nothing is written when any record is invalid.
func (s *Store) InsertMessages(ctx context.Context, msgs []persistence.NewMessage) ([]persistence.Message, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	batch := make([]persistence.NewMessage, len(msgs))
	ids := make(map[int64]bool, len(msgs))
	for i, nm := range msgs {
		nm.Payloads = append([]persistence.Payload(nil), nm.Payloads...)
		if err := checkNewMessage(&nm); err != nil {
			return nil, fmt.Errorf("insert messages: message %d: %w", i, prefixField(fmt.Sprintf("messages[%d].", i), err))
		}
		if ids[nm.Message.ID] {
			return nil, fmt.Errorf("insert messages: message id %d appears twice: %w", nm.Message.ID, persistence.ErrConflict)
		}
		ids[nm.Message.ID] = true
		batch[i] = nm
	}

	var out []persistence.Message
	err := s.write(ctx, func(t *txn) error {
		var err error
		out, err = t.insertMessages(ctx, batch)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert messages: %w", err)
	}
	return out, nil
}

func (t *txn) insertMessages(ctx context.Context, batch []persistence.NewMessage) ([]persistence.Message, error) {
	now := t.s.tv(t.now)
	wake := t.s.tv(t.now.Add(WakeupGrace))
	var msgRows, payloadRows, deliveryRows [][]any
	var notes []deliveryNote
	// The sessions are locked before any delivery row is inserted: see joinSessions.
	blocked, err := t.joinSessions(ctx, batch)
	if err != nil {
		return nil, err
	}
	out := make([]persistence.Message, len(batch))
	for i, nm := range batch {
		m := nm.Message
		// Every message starts as received; a dispatched one is settled below from its
		// deliveries like any other change, which writes its status and status line.
		m.Stage, m.Status = persistence.StageAccepted, persistence.StatusReceived
		if nm.Dispatch {
			m.Stage = persistence.StageDispatched
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = t.now
		}
		m.CreatedAt, m.UpdatedAt = utc(m.CreatedAt), t.now
		out[i] = m
		t.knowIDs(m.ID, m.CorrelationID, m.OriginEventID)
		t.noteStatus(m, m.Status)
		msgRows = append(msgRows, []any{m.ID, m.Stage, m.Status, m.Refusal, m.From, m.To, m.Source,
			m.OriginalFileName, m.Size, m.SHA256, m.CorrelationID, m.OriginEventID, encodeMetadata(m.Metadata), t.s.tv(m.CreatedAt), now, m.TraceParent})
		for _, p := range nm.Payloads {
			payloadRows = append(payloadRows, []any{p.MessageID, p.Stage, p.Key, p.Size, p.SHA256, now})
		}
		t.note(historyRow{messageID: m.ID, kind: persistence.HistoryReceived, actor: nm.Actor,
			reason: receivedReason(m)})
		if !nm.Dispatch {
			continue
		}
		states := make([]persistence.DeliveryState, len(nm.Targets))
		for i, tg := range nm.Targets {
			ses := nm.Sessions[tg]
			st, reason := persistence.DeliveryQueued, ses.Note
			if by, ok := blocked[ses.Key]; ok && ses.Key != "" {
				st = persistence.DeliveryParked
				reason = joinNote(reason, fmt.Sprintf("parked: session blocked by delivery %d", by))
			}
			next, wakeAt := any(now), any(wake)
			if st == persistence.DeliveryParked {
				next, wakeAt = nil, nil
			}
			policy, err := policyValue(nm.Retry[tg])
			if err != nil {
				return nil, err
			}
			deliveryRows = append(deliveryRows, []any{m.ID, tg, st, next, wakeAt, ses.Key, now, now, policy, m.CorrelationID, m.OriginEventID})
			states[i] = st
			if reason != "" {
				notes = append(notes, deliveryNote{m.ID, tg, st, reason})
			}
		}
		t.note(historyRow{messageID: m.ID, kind: persistence.HistoryDispatched, actor: nm.Actor, reason: refusedOr(nm.RefusalReason, dispatchedReason(nm.Targets, m.Refusal))})
		if nm.RefusalReason != "" {
			if t.lastChange == nil {
				t.lastChange = make(map[int64]MessageAlert)
			}
			t.lastChange[m.ID] = MessageAlert{Reason: persistence.SanitizeReason(nm.RefusalReason)}
		}
		t.touchNew(m, states)
	}
	err = t.insertRows(ctx, `INSERT INTO messages (id, stage, status, refusal, from_party, to_party, source,
		original_file_name, size, sha256, correlation_id, origin_event_id, metadata, created_at, updated_at, trace_parent)`, 16, msgRows)
	if isUniqueViolation(err) {
		return nil, t.duplicateMessage(ctx, batch)
	}
	if err != nil {
		return nil, fmt.Errorf("insert message rows: %w", err)
	}
	if err := t.insertRows(ctx, `INSERT INTO payloads (message_id, stage, key, size, sha256, created_at)`, 6, payloadRows); err != nil {
		return nil, fmt.Errorf("insert payload records: %w", err)
	}
	if err := t.insertRows(ctx, deliveryInsert, deliveryInsertCols, deliveryRows); err != nil {
		return nil, fmt.Errorf("insert deliveries: %w", err)
	}
	if err := t.noteDeliveries(ctx, notes); err != nil {
		return nil, err
	}
	for i, nm := range batch {
		if !nm.ByOperator {
			continue
		}
		m := out[i]
		id := strconv.FormatInt(m.ID, 10)
		// The record is named by the message's id, not its file name: a file name can be
		// content an erasure removes, and the audit log is never rewritten.
		if err := t.audit(operatorCtx(ctx, nm.Actor), "send", "message", id, "message "+id,
			[]audit.Change{{Path: "from", New: jsonString(string(m.From))}, {Path: "to", New: jsonString(string(m.To))},
				{Path: "source", New: jsonString(string(m.Source))}, {Path: "size", New: json.RawMessage(strconv.FormatInt(m.Size, 10))}}); err != nil {
			return nil, err
		}
	}
	settled, err := t.settle(ctx)
	if err != nil {
		return nil, err
	}
	for i, m := range out {
		if sm, ok := settled[m.ID]; ok {
			out[i] = sm
		}
	}
	return out, nil
}

// duplicateMessage names an id of the batch that exists already. The failed statement
// ended the transaction on PostgreSQL, so it asks outside it.
func (t *txn) duplicateMessage(ctx context.Context, batch []persistence.NewMessage) error {
	ids := make([]int64, len(batch))
	for i, nm := range batch {
		ids[i] = nm.Message.ID
	}
	cond, arg := t.s.idList("id", ids)
	var id int64
	err := t.s.r.QueryRowContext(ctx, t.s.rebind(`SELECT id FROM messages WHERE `+cond+` ORDER BY id LIMIT 1`), arg).Scan(&id)
	if err != nil {
		return fmt.Errorf("a message of the batch already exists: %w", persistence.ErrConflict)
	}
	return fmt.Errorf("message %d already exists: %w", id, persistence.ErrConflict)
}

// refusedOr is the dispatched line of a refused message with its reason, else def.
func refusedOr(reason, def string) string {
	if reason == "" {
		return def
	}
	return "refused: " + reason
}

func dispatchedReason(targets []persistence.InstanceName, refusal persistence.Refusal) string {
	switch {
	case len(targets) > 0:
	case refusal == persistence.RefusalRefused:
		return "refused: no deliveries"
	case refusal == persistence.RefusalError:
		return "failed before dispatch: no deliveries"
	default:
		return "not routed: no route matched"
	}
	names := make([]string, len(targets))
	for i, tg := range targets {
		names[i] = string(tg)
	}
	return "to " + strings.Join(names, ", ")
}

// GetMessage returns one message.
func (s *Store) GetMessage(ctx context.Context, id int64) (persistence.Message, error) {
	var out persistence.Message
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanMessage(t.queryRow(ctx, `SELECT `+messageCols+` FROM messages WHERE id = ?`, id))
		return notFound(err, "message %d", id)
	})
	return out, err
}

// FindMessageByOrigin finds the message a source stored with this origin event id, the
// newest if there are several. Sources use it to tell, after a crash, whether a document
// they were handing over was stored; the record of a document they refused (refusal
// class other than none) is not such a message, so a later, accepted copy of it is not
// mistaken for one already stored.
func (s *Store) FindMessageByOrigin(ctx context.Context, source persistence.InstanceName, originEventID string) (persistence.Message, error) {
	var out persistence.Message
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanMessage(t.queryRow(ctx, `SELECT `+messageCols+` FROM messages
			WHERE origin_event_id = ? AND source = ? AND refusal = 'none' ORDER BY id DESC LIMIT 1`, originEventID, source))
		return notFound(err, "message of %s with origin event id %q", source, originEventID)
	})
	return out, err
}

// likePattern escapes s for LIKE … ESCAPE '\' and wraps it for a substring match.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// ListMessages lists messages matching f, newest first, with the total count. Q matches
// a substring of the original file name, correlation id or origin event id, ignoring the
// case of ASCII letters.
func (s *Store) ListMessages(ctx context.Context, f persistence.MessageFilter) ([]persistence.Message, int, error) {
	limit, offset := page(f.ListOptions)
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if f.Status != "" {
		add(`status = ?`, string(f.Status))
	}
	if f.From != "" {
		add(`from_party = ?`, string(f.From))
	}
	if f.To != "" {
		add(`to_party = ?`, string(f.To))
	}
	if f.Source != "" {
		add(`source = ?`, string(f.Source))
	}
	if !f.Since.IsZero() {
		add(`created_at >= ?`, s.tv(f.Since))
	}
	if !f.Until.IsZero() {
		add(`created_at < ?`, s.tv(f.Until))
	}
	if f.Partner != "" {
		add(`(from_party = ? OR to_party = ?)`, string(f.Partner), string(f.Partner))
	}
	switch f.Direction {
	case persistence.DirectionInbound:
		add(`from_party IN (SELECT name FROM parties WHERE kind = ?)`, string(persistence.PartyPartner))
	case persistence.DirectionOutbound:
		add(`to_party IN (SELECT name FROM parties WHERE kind = ?)`, string(persistence.PartyPartner))
	}
	if len(f.Statuses) > 0 {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(f.Statuses)), ", ")
		for _, st := range f.Statuses {
			args = append(args, string(st))
		}
		where = append(where, `status IN (`+marks+`)`)
	}
	if f.IDs != nil {
		if len(f.IDs) == 0 {
			add(`1 = 0`)
		} else {
			marks := strings.TrimSuffix(strings.Repeat("?, ", len(f.IDs)), ", ")
			for _, id := range f.IDs {
				args = append(args, id)
			}
			where = append(where, `id IN (`+marks+`)`)
		}
	}
	if f.Q != "" {
		p := likePattern(f.Q)
		add(`(LOWER(original_file_name) LIKE ? ESCAPE '\' OR LOWER(correlation_id) LIKE ? ESCAPE '\' OR LOWER(origin_event_id) LIKE ? ESCAPE '\')`, p, p, p)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var out []persistence.Message
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM messages`+cond, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := t.query(ctx, `SELECT `+messageCols+` FROM messages`+cond+` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
			append(args, limit, offset)...)
		out, err = collect(rows, err, scanMessage)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list messages: %w", err)
	}
	return out, total, nil
}

// messageExists tells ErrNotFound from an empty list.
func (t *txn) messageExists(ctx context.Context, id int64) error {
	var one int
	err := t.queryRow(ctx, `SELECT 1 FROM messages WHERE id = ?`, id).Scan(&one)
	return notFound(err, "message %d", id)
}

// ListDeliveries lists a message's deliveries in creation order.
func (s *Store) ListDeliveries(ctx context.Context, messageID int64) ([]persistence.Delivery, error) {
	var out []persistence.Delivery
	err := s.read(ctx, func(t *txn) error {
		if err := t.messageExists(ctx, messageID); err != nil {
			return err
		}
		rows, err := t.query(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE message_id = ? ORDER BY id`, messageID)
		if out, err = collect(rows, err, scanDelivery); err != nil {
			return err
		}
		return t.fillSessionPositions(ctx, out)
	})
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// GetDelivery returns one delivery.
func (s *Store) GetDelivery(ctx context.Context, id int64) (persistence.Delivery, error) {
	var out persistence.Delivery
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanDelivery(t.queryRow(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE id = ?`, id))
		return notFound(err, "delivery %d", id)
	})
	return out, err
}

// ListHistory lists a message's history in the order it was written.
func (s *Store) ListHistory(ctx context.Context, messageID int64) ([]persistence.HistoryEntry, error) {
	var out []persistence.HistoryEntry
	err := s.read(ctx, func(t *txn) error {
		// History is never older than its message (less the clock skew a source's
		// creation time may carry): the bound lets PostgreSQL read only the partitions
		// from the message's month on.
		var created time.Time
		err := t.queryRow(ctx, `SELECT created_at FROM messages WHERE id = ?`, messageID).Scan(timeCol{&created})
		if err := notFound(err, "message %d", messageID); err != nil {
			return err
		}
		rows, err := t.query(ctx, `SELECT `+historyCols+` FROM message_history WHERE message_id = ? AND at >= ? ORDER BY id`, messageID, t.s.tv(created.Add(-historySkew)))
		out, err = collect(rows, err, scanHistory)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list history: %w", err)
	}
	return out, nil
}

// ListPayloads lists a message's payload records by stage.
func (s *Store) ListPayloads(ctx context.Context, messageID int64) ([]persistence.Payload, error) {
	var out []persistence.Payload
	err := s.read(ctx, func(t *txn) error {
		if err := t.messageExists(ctx, messageID); err != nil {
			return err
		}
		rows, err := t.query(ctx, `SELECT `+payloadCols+` FROM payloads WHERE message_id = ? ORDER BY stage`, messageID)
		out, err = collect(rows, err, scanPayload)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list payloads: %w", err)
	}
	return out, nil
}

// GetPayload returns one payload record of a message.
func (s *Store) GetPayload(ctx context.Context, messageID int64, stage persistence.PayloadStage) (persistence.Payload, error) {
	var out persistence.Payload
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanPayload(t.queryRow(ctx, `SELECT `+payloadCols+` FROM payloads WHERE message_id = ? AND stage = ?`,
			messageID, string(stage)))
		return notFound(err, "payload %s of message %d", stage, messageID)
	})
	return out, err
}

// AddPayload records one more blob of an existing message (e.g. its receipt); a stage the
// message has already is ErrConflict.
func (s *Store) AddPayload(ctx context.Context, p persistence.Payload) error {
	if err := checkPayload(p); err != nil {
		return fmt.Errorf("add payload: %w", err)
	}
	return s.write(ctx, func(t *txn) error {
		if err := t.messageExists(ctx, p.MessageID); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO payloads (message_id, stage, key, size, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			p.MessageID, p.Stage, p.Key, p.Size, p.SHA256, t.s.tv(t.now))
		if isUniqueViolation(err) {
			return fmt.Errorf("payload %s of message %d already exists: %w", p.Stage, p.MessageID, persistence.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("add payload %s of message %d: %w", p.Stage, p.MessageID, err)
		}
		return nil
	})
}
