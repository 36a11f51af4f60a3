package db

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Settle's writes: the recomputed status of the messages and the history lines. On
// PostgreSQL they go in one statement, the status updates as common table expressions
// leading the history insert, and the lines as one array per column.

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
