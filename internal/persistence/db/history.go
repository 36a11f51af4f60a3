package db

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"wharf/internal/persistence"
)

type historyRow struct {
	messageID  int64
	deliveryID int64 // 0: the line is about the message
	kind       persistence.HistoryKind
	from, to   string
	reason     string
	actor      string
	at         time.Time // zero: the transaction's time
	reportedAt time.Time // a downstream status's reporter time; zero: none
}

// note appends a history line, written when the transaction finishes.
func (t *txn) note(h historyRow) {
	h.reason = persistence.SanitizeReason(h.reason)
	h.actor = actorOr(h.actor)
	t.hist = append(t.hist, h)
}

// changed records one delivery transition: its history line, and its message for the
// status recomputation.
func (t *txn) changed(tr transition, reason, actor string, at time.Time) {
	t.note(historyRow{
		messageID:  tr.d.MessageID,
		deliveryID: tr.d.ID,
		kind:       persistence.HistoryDeliveryChanged,
		from:       string(tr.from),
		to:         string(tr.d.State),
		reason:     reason,
		actor:      actor,
		at:         at,
	})
	t.touch(tr.d.MessageID)
	t.keepPresettled(tr)
	t.noteDelivery(tr)
	t.sessionChanged(tr)
	if (tr.d.State == persistence.DeliveryFailed || tr.d.State == persistence.DeliveryStalled) && t.s.onAlert.Load() != nil {
		if t.lastChange == nil {
			t.lastChange = make(map[int64]MessageAlert)
		}
		t.lastChange[tr.d.MessageID] = MessageAlert{Target: tr.d.Target, Reason: persistence.SanitizeReason(reason)}
	}
}

// touch marks a message whose deliveries changed (or were added).
func (t *txn) touch(messageID int64) {
	if t.touched == nil {
		t.touched = make(map[int64]bool)
	}
	t.touched[messageID] = true
}

// touchNew marks a message this transaction inserted, with the states of all its
// deliveries: settle derives its status from them rather than reading back rows nobody
// else can see yet.
func (t *txn) touchNew(m persistence.Message, states []persistence.DeliveryState) {
	t.touch(m.ID)
	if t.inserted == nil {
		t.inserted = make(map[int64]insertedMessage)
	}
	t.inserted[m.ID] = insertedMessage{m, states}
}

type insertedMessage struct {
	message persistence.Message
	states  []persistence.DeliveryState
}

// finish settles the touched messages and writes the history lines.
func (t *txn) finish(ctx context.Context) error {
	if _, err := t.settle(ctx); err != nil {
		return err
	}
	if err := t.flushHistory(ctx); err != nil {
		return err
	}
	return t.flushStatus(ctx)
}

// settle recomputes stage and status of every touched message from all its deliveries,
// with persistence.DeriveStage and persistence.DeriveStatus, the only code that decides
// either. On PostgreSQL the messages are locked first, in id order, so two transactions
// changing deliveries of one message cannot both derive from a stale view; a message this
// transaction inserted is neither read nor locked, since no other can see it yet. It
// returns the settled messages; their status updates wait for finish (flushStatus).
func (t *txn) settle(ctx context.Context) (map[int64]persistence.Message, error) {
	// Blocking and unblocking sessions changes more deliveries (parked, released), so it
	// comes first; it changes no delivery it would have to look at again.
	if err := t.applySessions(ctx); err != nil {
		return nil, err
	}
	if len(t.touched) == 0 {
		return nil, nil
	}
	ids := slices.Sorted(maps.Keys(t.touched))
	t.touched = nil
	msgs := make(map[int64]persistence.Message, len(ids))
	states := make(map[int64][]persistence.DeliveryState, len(ids))
	read := make([]int64, 0, len(ids))
	for _, id := range ids {
		if in, ok := t.inserted[id]; ok {
			msgs[id], states[id] = in.message, in.states
			continue
		}
		read = append(read, id)
	}
	t.inserted = nil
	if err := t.readSettling(ctx, read, msgs, states); err != nil {
		return nil, err
	}

	type derived struct {
		stage  persistence.MessageStage
		status persistence.MessageStatus
	}
	groups := make(map[derived][]int64)
	for _, id := range ids {
		m, ok := msgs[id]
		if !ok {
			return nil, fmt.Errorf("settle message %d: %w", id, persistence.ErrNotFound)
		}
		stage := persistence.DeriveStage(m.Stage, states[id])
		status := persistence.DeriveStatus(stage, m.Refusal, states[id])
		if status != m.Status {
			t.note(historyRow{
				messageID: id,
				kind:      persistence.HistoryStatusChanged,
				from:      string(m.Status),
				to:        string(status),
				actor:     t.actor,
			})
			t.noteStatus(m, status)
		}
		if status != m.Status && (slices.Contains(alertStatuses, status) || slices.Contains(alertStatuses, m.Status)) &&
			t.s.onAlert.Load() != nil {
			var f MessageAlert
			if slices.Contains(alertStatuses, status) {
				f = t.lastChange[id]
			}
			f.Message, f.Previous = m, m.Status
			f.Message.Stage, f.Message.Status = stage, status
			t.alerts = append(t.alerts, f)
		}
		m.Stage, m.Status, m.UpdatedAt = stage, status, t.now
		msgs[id] = m
		k := derived{stage, status}
		groups[k] = append(groups[k], id)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b derived) int {
		return cmp.Or(cmp.Compare(a.stage, b.stage), cmp.Compare(a.status, b.status))
	})
	for _, k := range keys {
		cond, arg := t.s.idList("id", groups[k])
		t.statusUpdates = append(t.statusUpdates, statusUpdate{
			q:    `UPDATE messages SET stage = ?, status = ?, updated_at = ? WHERE ` + cond,
			args: []any{k.stage, k.status, t.s.tv(t.now), arg},
		})
	}
	return msgs, nil
}

// readSettling reads (and on PostgreSQL locks) the messages of ids with the states of
// their deliveries.
func (t *txn) readSettling(ctx context.Context, ids []int64, msgs map[int64]persistence.Message, states map[int64][]persistence.DeliveryState) error {
	if ids = t.usePresettled(ids, msgs, states); len(ids) == 0 {
		return nil
	}
	if t.allLocked(ids) {
		return t.readLockedSettling(ctx, ids, msgs, states)
	}
	cond, arg := t.s.idList("id", ids)
	rows, err := t.query(ctx, `SELECT `+messageCols+` FROM messages WHERE `+cond+` ORDER BY id`+t.s.lockStatus, arg)
	if err != nil {
		return fmt.Errorf("lock messages: %w", err)
	}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			rows.Close()
			return err
		}
		msgs[m.ID] = m
		t.knowIDs(m.ID, m.CorrelationID, m.OriginEventID)
	}
	if err := closeRows(rows); err != nil {
		return err
	}

	cond, arg = t.s.idList("message_id", ids)
	rows, err = t.query(ctx, `SELECT message_id, state FROM deliveries WHERE `+cond, arg)
	if err != nil {
		return fmt.Errorf("read delivery states: %w", err)
	}
	for rows.Next() {
		var id int64
		var st persistence.DeliveryState
		if err := rows.Scan(&id, &st); err != nil {
			rows.Close()
			return fmt.Errorf("read delivery states: %w", err)
		}
		states[id] = append(states[id], st)
	}
	return closeRows(rows)
}

const historyInsert = `INSERT INTO message_history (message_id, delivery_id, at, kind, from_state, to_state, reason, actor, reported_at, correlation_id, origin_event_id)`

func (t *txn) flushHistory(ctx context.Context) error {
	if len(t.hist) == 0 {
		return nil
	}
	if err := t.readRefs(ctx); err != nil {
		return err
	}
	lines := make([]historyLine, len(t.hist))
	seen := make(map[int64]bool, len(t.hist))
	for i, h := range t.hist {
		if !seen[h.messageID] {
			seen[h.messageID] = true
			t.announced = append(t.announced, h.messageID)
		}
		l := historyLine{historyRow: h, ref: t.refs[h.messageID]}
		if l.at.IsZero() {
			l.at = t.now
		}
		l.at, l.reportedAt = utc(l.at), utc(l.reportedAt)
		lines[i] = l
	}
	t.hist = nil
	if t.s.dialect == DialectPostgres {
		lead, leadArgs := t.statusLead()
		return t.insertHistoryColumns(ctx, lead, leadArgs, lines)
	}
	rows := make([][]any, len(lines))
	for i, l := range lines {
		var did, reported any
		if l.deliveryID != 0 {
			did = l.deliveryID
		}
		if !l.reportedAt.IsZero() {
			reported = t.s.tv(l.reportedAt)
		}
		rows[i] = []any{l.messageID, did, t.s.tv(l.at), string(l.kind), l.from, l.to, l.reason, l.actor, reported,
			l.ref.correlationID, l.ref.originEventID}
	}
	if err := t.insertRows(ctx, historyInsert, 11, rows); err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	return nil
}

// historyLine is a history row as written: its time set and its message's ids.
type historyLine struct {
	historyRow
	ref messageRefs
}

// noteKinds are the history lines NoteHistory may append.
var noteKinds = []persistence.HistoryKind{persistence.HistoryDuplicateReceived, persistence.HistoryMDNUndeliverable}

// NoteHistory appends a message-level history line that changes no state.
func (s *Store) NoteHistory(ctx context.Context, messageID int64, kind persistence.HistoryKind, reason, actor string) error {
	// Lines that record a state change are written by the change itself.
	if !slices.Contains(noteKinds, kind) {
		return fmt.Errorf("note history of message %d: %w", messageID, fieldMsg("kind", "%q is not a note", kind))
	}
	err := s.write(ctx, func(t *txn) error {
		if err := t.messageExists(ctx, messageID); err != nil {
			return err
		}
		t.note(historyRow{messageID: messageID, kind: kind, reason: reason, actor: actorOr(actor)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("note history of message %d: %w", messageID, err)
	}
	return nil
}

// OnHistory sets fn to be called after every commit that appended history, with the ids
// of the messages concerned, each once. Every change of a message or its deliveries
// writes history, so this is the one place that hears of them all: live views and the
// bus announcement hang off it. fn runs on the committing goroutine and must not block;
// nil removes it.
func (s *Store) OnHistory(fn func(messageIDs []int64)) {
	if fn == nil {
		s.onHistory.Store(nil)
		return
	}
	s.onHistory.Store(&fn)
}
