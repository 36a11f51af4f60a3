package db

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"wharf/internal/persistence"
)

// On PostgreSQL every statement is a round trip, and settling a batch of transitions
// took four after the statement that changed the deliveries: lock the messages, read
// their delivery states, set their status, append the history. The statements that
// change claimed deliveries lock the messages themselves and return them with their
// delivery states (lockingMessages), so settle mostly reads nothing (presettle), else the
// locked messages in one statement (readLockedSettling); the status updates go out with
// the history insert (statusLead, insertHistoryColumns).

// lockingMessages turns update, an "UPDATE deliveries … RETURNING transitionCols" after the
// common table expressions of with (empty, or "WITH …"), into a statement that on
// PostgreSQL also locks the messages of the changed deliveries in id order, as settle
// would in a statement of its own, and returns each message as the statement's snapshot
// saw it with its deliveries' states; join, when not empty, is joined to the changed rows
// as u (a LEFT JOIN and its condition) and extra names what it adds to each row. On
// SQLite, whose single writer needs no lock, the statement is update itself and join
// and extra are left out. Scan the rows with a lockingScan.
//
// The snapshot is taken before the locks: when a message was changed and committed in
// between, its locked row is a newer version than the one read (their xmin differ), and
// settle reads it again after the lock (readLockedSettling). Every change of a
// delivery's state settles its message, which writes the message's row, so a message
// whose row did not change has the delivery states the snapshot saw.
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
	// A SELECT in WITH runs only as far as it is read: the count makes the locks certain.
	return with + `u AS (` + update + `),
		l AS (SELECT id, xmin FROM messages WHERE id IN (SELECT message_id FROM u) ORDER BY id` + s.lockStatus + `),
		m AS (SELECT ` + messageCols + `, xmin AS seen,
			(SELECT string_agg(CAST(d.id AS TEXT) || ':' || d.state, ',') FROM deliveries d WHERE d.message_id = messages.id) AS states
			FROM messages WHERE id IN (SELECT message_id FROM u))
		SELECT ` + cols + `, ` + qualifiedMessageCols + `, m.states, l.xmin = m.seen
		FROM u JOIN l ON l.id = u.message_id JOIN m ON m.id = u.message_id ` + join + `
		CROSS JOIN (SELECT COUNT(*) FROM l) n`
}

// qualifiedMessageCols are messageCols of the lockingMessages statement's m.
var qualifiedMessageCols = "m." + strings.ReplaceAll(messageCols, ", ", ", m.")

// lockingScan scans the rows of a lockingMessages statement and, on PostgreSQL, keeps
// what they say of the messages for settle (presettle).
type lockingScan struct {
	t    *txn
	rows []lockingRow
}

type lockingRow struct {
	tr      transition
	m       persistence.Message
	states  *string
	current bool
}

// scan reads one row: the transition, then the caller's extra destinations.
func (ls *lockingScan) scan(r rowScanner, extra ...any) (transition, error) {
	if ls.t.s.dialect != DialectPostgres {
		return scanTransition(withExtra{r, extra})
	}
	var row lockingRow
	var meta string
	dests := append(append(slices.Clone(extra), messageDests(&row.m, &meta)...), &row.states, &row.current)
	tr, err := scanTransition(withExtra{r, dests})
	if err != nil {
		return tr, err
	}
	if err := decodeMessageMetadata(&row.m, meta); err != nil {
		return tr, err
	}
	row.tr = tr
	ls.rows = append(ls.rows, row)
	return tr, nil
}

// presettle notes the messages of the scanned rows as locked and, for each one whose row
// did not change between the snapshot and the lock, the message and its delivery states
// with the statement's own transitions applied, so settle reads nothing more.
func (ls *lockingScan) presettle() {
	t := ls.t
	if t.s.dialect != DialectPostgres {
		return
	}
	trs := make([]transition, len(ls.rows))
	byMessage := make(map[int64][]lockingRow)
	for i, row := range ls.rows {
		trs[i] = row.tr
		byMessage[row.tr.d.MessageID] = append(byMessage[row.tr.d.MessageID], row)
	}
	t.lockedMessages(trs)
	for id, rows := range byMessage {
		delete(t.presettled, id)
		if !rows[0].current {
			continue
		}
		states, ok := parseDeliveryStates(rows[0].states)
		if !ok {
			continue
		}
		for _, row := range rows {
			states[row.tr.d.ID] = row.tr.d.State
		}
		if t.presettled == nil {
			t.presettled = make(map[int64]presettled)
		}
		t.presettled[id] = presettled{m: rows[0].m, states: states}
	}
}

// parseDeliveryStates reads the "id:state,…" list of the lockingMessages statement.
func parseDeliveryStates(list *string) (map[int64]persistence.DeliveryState, bool) {
	out := make(map[int64]persistence.DeliveryState)
	if list == nil {
		return out, true
	}
	for _, pair := range strings.Split(*list, ",") {
		idText, state, found := strings.Cut(pair, ":")
		id, err := strconv.ParseInt(idText, 10, 64)
		if !found || err != nil {
			return nil, false
		}
		out[id] = persistence.DeliveryState(state)
	}
	return out, true
}

// presettled is a message and its delivery states, by delivery, as they stand in the
// transaction.
type presettled struct {
	m      persistence.Message
	states map[int64]persistence.DeliveryState
}

// keepPresettled drops the presettled view of tr's message unless it already holds tr's
// new state: a transition that came from another statement makes settle read again.
func (t *txn) keepPresettled(tr transition) {
	p, ok := t.presettled[tr.d.MessageID]
	if ok && p.states[tr.d.ID] != tr.d.State {
		delete(t.presettled, tr.d.MessageID)
	}
}

// usePresettled moves the presettled messages of ids into msgs and states and returns the
// ids left to read.
func (t *txn) usePresettled(ids []int64, msgs map[int64]persistence.Message, states map[int64][]persistence.DeliveryState) []int64 {
	if len(t.presettled) == 0 {
		return ids
	}
	rest := ids[:0:0]
	for _, id := range ids {
		p, ok := t.presettled[id]
		if !ok {
			rest = append(rest, id)
			continue
		}
		delete(t.presettled, id)
		msgs[id] = p.m
		t.knowIDs(id, p.m.CorrelationID, p.m.OriginEventID)
		list := make([]persistence.DeliveryState, 0, len(p.states))
		for _, st := range p.states {
			list = append(list, st)
		}
		states[id] = list
	}
	return rest
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
