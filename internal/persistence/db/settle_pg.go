package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// On PostgreSQL every statement is a round trip, and settling a batch of transitions
// took four after the statement that changed the deliveries: lock the messages, read
// their delivery states, set their status, append the history. The statements that
// change claimed deliveries lock the messages themselves (lockingMessages), so settle
// reads each message with its delivery states in one statement (readLockedSettling), and
// the status updates go out with the first history insert (statusUpdate, flushHistory).

// lockingMessages turns update, an "UPDATE deliveries … RETURNING transitionCols" after the
// common table expressions of with (empty, or "WITH …"), into a statement that on
// PostgreSQL also locks the messages of the changed deliveries in id order, as settle
// would in a statement of its own; join, when not empty, is joined to the changed rows
// as u (a LEFT JOIN and its condition) and extra names what it adds to each row. On
// SQLite, whose single writer needs no lock, the statement is update itself and join
// and extra are left out.
func (s *Store) lockingMessages(with, update, join, extra string) string {
	if s.dialect != DialectPostgres {
		if with == "" {
			return update
		}
		return with + " " + update
	}
	if with == "" {
		with = "WITH "
	} else {
		with += ", "
	}
	cols := "u.*"
	if extra != "" {
		cols += ", " + extra
	}
	// A SELECT in WITH runs only when read: the count makes the locks certain.
	return with + `u AS (` + update + `),
		l AS (SELECT id FROM messages WHERE id IN (SELECT message_id FROM u) ORDER BY id` + s.lockStatus + `)
		SELECT ` + cols + ` FROM u ` + join + ` CROSS JOIN (SELECT COUNT(*) FROM l) n`
}

// lockedMessages notes the messages of transitions a lockingMessages statement returned.
func (t *txn) lockedMessages(trs []transition) {
	if t.s.dialect != DialectPostgres {
		return
	}
	if t.locked == nil {
		t.locked = make(map[int64]bool, len(trs))
	}
	for _, tr := range trs {
		t.locked[tr.d.MessageID] = true
	}
}

// allLocked reports whether an earlier statement of the transaction locked every message
// of ids.
func (t *txn) allLocked(ids []int64) bool {
	if t.s.dialect != DialectPostgres || len(t.locked) == 0 {
		return false
	}
	for _, id := range ids {
		if !t.locked[id] {
			return false
		}
	}
	return true
}

// readLockedSettling reads messages this transaction has locked with the states of their
// deliveries, in one statement: its snapshot is taken after the locks, so it sees every
// change committed before them.
func (t *txn) readLockedSettling(ctx context.Context, ids []int64, msgs map[int64]persistence.Message, states map[int64][]persistence.DeliveryState) error {
	cond, arg := t.s.idList("id", ids)
	rows, err := t.query(ctx, `SELECT `+messageCols+`,
		(SELECT string_agg(CAST(d.state AS TEXT), ',') FROM deliveries d WHERE d.message_id = messages.id)
		FROM messages WHERE `+cond, arg)
	if err != nil {
		return fmt.Errorf("read messages and delivery states: %w", err)
	}
	for rows.Next() {
		var list *string
		m, err := scanMessage(withExtra{rows, []any{&list}})
		if err != nil {
			rows.Close()
			return err
		}
		msgs[m.ID] = m
		t.knowIDs(m.ID, m.CorrelationID, m.OriginEventID)
		if list != nil {
			for _, st := range strings.Split(*list, ",") {
				states[m.ID] = append(states[m.ID], persistence.DeliveryState(st))
			}
		}
	}
	return closeRows(rows)
}

// withExtra scans a row's leading columns into the caller's destinations and the columns
// after them into extra.
type withExtra struct {
	r     rowScanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.r.Scan(append(dest, w.extra...)...) }

// statusUpdate is one recomputed stage and status for a group of messages.
type statusUpdate struct {
	q    string
	args []any
}

// flushStatus runs the status updates no history insert took along.
func (t *txn) flushStatus(ctx context.Context) error {
	ups := t.statusUpdates
	t.statusUpdates = nil
	for _, u := range ups {
		if _, err := t.exec(ctx, u.q, u.args...); err != nil {
			return fmt.Errorf("update message status: %w", err)
		}
	}
	return nil
}

// statusLead returns the pending status updates as common table expressions to lead a
// PostgreSQL insert, with their arguments, and takes them from the transaction.
func (t *txn) statusLead() (string, []any) {
	if t.s.dialect != DialectPostgres || len(t.statusUpdates) == 0 {
		return "", nil
	}
	var b strings.Builder
	var args []any
	for i, u := range t.statusUpdates {
		if i == 0 {
			b.WriteString("WITH ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "s%d AS (%s) ", i, u.q)
		args = append(args, u.args...)
	}
	t.statusUpdates = nil
	return b.String(), args
}

// historyColumns inserts history lines from one array per column: one statement, and one
// statement text, for any number of lines, where VALUES lists need several of both. The
// lines keep their order, and so their ids do.
const historyColumns = historyInsert + ` SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]),
	CAST(? AS TIMESTAMPTZ[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]),
	CAST(? AS TIMESTAMPTZ[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]))`

// insertHistoryColumns appends history lines (PostgreSQL) after lead and its arguments,
// in one statement.
func (t *txn) insertHistoryColumns(ctx context.Context, lead string, leadArgs []any, lines []historyLine) error {
	n := len(lines)
	var (
		messageIDs  = make([]int64, n)
		deliveryIDs = make([]*int64, n)
		at          = make([]time.Time, n)
		reported    = make([]*time.Time, n)
		text        [7][]string // kind, from, to, reason, actor, correlation id, origin event id
	)
	for k := range text {
		text[k] = make([]string, n)
	}
	for i, l := range lines {
		messageIDs[i], at[i] = l.messageID, l.at
		if l.deliveryID != 0 {
			deliveryIDs[i] = &l.deliveryID
		}
		if !l.reportedAt.IsZero() {
			reported[i] = &l.reportedAt
		}
		for k, v := range []string{string(l.kind), l.from, l.to, l.reason, l.actor, l.ref.correlationID, l.ref.originEventID} {
			text[k][i] = v
		}
	}
	args := append(leadArgs, messageIDs, deliveryIDs, at, text[0], text[1], text[2], text[3], text[4], reported, text[5], text[6])
	if _, err := t.exec(ctx, lead+historyColumns, args...); err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	return nil
}
