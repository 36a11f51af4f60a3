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

// Ordered sessions in the store. Order within a session holds by construction:
//
//   - every dispatch into a session locks its sessions row (joinSessions) before it
//     inserts the delivery rows, so two transactions dispatching into one session
//     commit one after the other and delivery ids follow commit order within it;
//   - a claim takes a delivery only when no earlier delivery of its session is
//     unsettled (claims.go, sessionFree), so ids are also attempt order;
//   - a delivery of a session that becomes failed, on whatever path, goes through
//     txn.changed, and settle, which every transaction runs before it commits, blocks
//     the session and parks its later deliveries in that transaction (applySessions);
//     a blocking delivery that becomes delivered or skipped unblocks it and releases
//     the parked ones to queued, again in the same transaction.

// maxSessionKey bounds a session key: a target, a metadata name and a value.
const maxSessionKey = 400

func checkSessionKey(key string) error {
	if key == "" {
		return fieldMsg("key", "is empty")
	}
	return checkText("key", key, maxSessionKey)
}

// SessionAlert is a session that a commit blocked (Resolved false) or unblocked.
type SessionAlert struct {
	Key        string
	Target     persistence.InstanceName
	From, To   persistence.PartyName
	DeliveryID int64 // the delivery that blocked it
	MessageID  int64
	Reason     string // the blocking delivery's sanitized error
	Resolved   bool
	// At is the time of the transaction that blocked or unblocked the session: a
	// resolution and a later blocking keep their order however late their hooks run.
	At time.Time
}

// OnSessionAlert sets fn to be called after each commit for every ordered session the
// commit blocked or unblocked, once per event. fn runs in the committing goroutine and
// must not block; nil removes it.
func (s *Store) OnSessionAlert(fn func(SessionAlert)) {
	if fn == nil {
		s.onSessionAlert.Store(nil)
		return
	}
	s.onSessionAlert.Store(&fn)
}

// sessionWork is what a transaction's delivery changes mean for their sessions, applied
// by applySessions before the touched messages settle.
type sessionWork struct {
	failed  []persistence.Delivery // deliveries of a session that became failed
	settled []persistence.Delivery // deliveries of a session that became delivered or skipped
	alerts  []SessionAlert
}

// sessionChanged notes a transition of a session's delivery for applySessions.
func (t *txn) sessionChanged(tr transition) {
	if tr.d.SessionKey == "" || tr.from == tr.d.State {
		return
	}
	switch tr.d.State {
	case persistence.DeliveryFailed:
		t.sessions.failed = append(t.sessions.failed, tr.d)
	case persistence.DeliveryDelivered, persistence.DeliverySkipped:
		t.sessions.settled = append(t.sessions.settled, tr.d)
	}
}

// applySessions blocks the sessions of deliveries that failed and parks their later
// deliveries, and unblocks the sessions whose blocking delivery was delivered or skipped,
// releasing their parked deliveries to queued, due now. Sessions are locked in key order.
func (t *txn) applySessions(ctx context.Context) error {
	failed, settled := t.sessions.failed, t.sessions.settled
	t.sessions.failed, t.sessions.settled = nil, nil
	slices.SortFunc(failed, func(a, b persistence.Delivery) int {
		return cmp.Or(cmp.Compare(a.SessionKey, b.SessionKey), cmp.Compare(a.ID, b.ID))
	})
	for _, d := range failed {
		if err := t.blockSession(ctx, d); err != nil {
			return fmt.Errorf("block session of delivery %d: %w", d.ID, err)
		}
	}
	if len(settled) == 0 {
		return nil
	}
	ids := make([]int64, len(settled))
	for i, d := range settled {
		ids[i] = d.ID
	}
	cond, arg := t.s.idList("blocked_by", ids)
	rows, err := t.query(ctx, `UPDATE sessions SET blocked_by = NULL, blocked_at = NULL, updated_at = ?
		WHERE `+cond+` RETURNING key, target, from_party, to_party`, t.s.tv(t.now), arg)
	type unblocked struct {
		key      string
		target   persistence.InstanceName
		from, to persistence.PartyName
	}
	ub, err := collect(rows, err, func(r rowScanner) (u unblocked, err error) {
		return u, r.Scan(&u.key, &u.target, &u.from, &u.to)
	})
	if err != nil {
		return fmt.Errorf("unblock sessions: %w", err)
	}
	slices.SortFunc(ub, func(a, b unblocked) int { return cmp.Compare(a.key, b.key) })
	byKey := make(map[string]persistence.Delivery, len(settled))
	for _, d := range settled {
		byKey[d.SessionKey] = d
	}
	for _, u := range ub {
		by := byKey[u.key]
		reason := fmt.Sprintf("session unblocked: delivery %d %s", by.ID, by.State)
		if err := t.releaseParked(ctx, u.key, reason); err != nil {
			return err
		}
		t.sessions.alerts = append(t.sessions.alerts, SessionAlert{Key: u.key, Target: u.target, From: u.from, To: u.to,
			DeliveryID: by.ID, MessageID: by.MessageID, Resolved: true, At: t.now})
	}
	return nil
}

// blockSession makes d, which failed, the delivery that blocks its session unless the
// session is blocked already, and parks every later delivery of the session that waits.
func (t *txn) blockSession(ctx context.Context, d persistence.Delivery) error {
	var by *int64
	var from, to persistence.PartyName
	// The row normally exists (dispatch created it); the upsert also locks it.
	err := t.queryRow(ctx, `INSERT INTO sessions (key, target, from_party, to_party, created_at, updated_at)
		SELECT ?, d.target, m.from_party, m.to_party, ?, ?
		FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE d.id = ?
		ON CONFLICT (key) DO UPDATE SET updated_at = excluded.updated_at
		RETURNING blocked_by, from_party, to_party`,
		d.SessionKey, t.s.tv(t.now), t.s.tv(t.now), d.ID).Scan(&by, &from, &to)
	if err != nil {
		return fmt.Errorf("lock session: %w", err)
	}
	blocker := d.ID
	if by == nil {
		if _, err := t.exec(ctx, `UPDATE sessions SET blocked_by = ?, blocked_at = ? WHERE key = ?`,
			d.ID, t.s.tv(t.now), d.SessionKey); err != nil {
			return fmt.Errorf("block session: %w", err)
		}
		t.sessions.alerts = append(t.sessions.alerts, SessionAlert{Key: d.SessionKey, Target: d.Target, From: from, To: to,
			DeliveryID: d.ID, MessageID: d.MessageID, Reason: persistence.SanitizeReason(d.LastError), At: t.now})
	} else {
		blocker = *by
	}
	reason := fmt.Sprintf("parked: session blocked by delivery %d", blocker)
	rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'parked',
			next_attempt_at = NULL, next_wakeup_at = NULL, wakeups = 0, updated_at = ?
		WHERE session_key = ? AND id > ? AND state IN ('queued', 'retrying', 'stalled')
		RETURNING `+transitionCols, t.s.tv(t.now), d.SessionKey, d.ID)
	if _, err := t.recordTransitions(rows, err, reason); err != nil {
		return fmt.Errorf("park deliveries: %w", err)
	}
	return nil
}

// releaseParked makes the parked deliveries of a session queued and due now, in id order.
func (t *txn) releaseParked(ctx context.Context, key, reason string) error {
	now := t.s.tv(t.now)
	rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'queued',
			next_attempt_at = ?, next_wakeup_at = ?, wakeups = 0, updated_at = ?
		WHERE session_key = ? AND state = 'parked'
		RETURNING `+transitionCols, now, t.s.tv(t.now.Add(WakeupGrace)), now, key)
	if _, err := t.recordTransitions(rows, err, reason); err != nil {
		return fmt.Errorf("release parked deliveries: %w", err)
	}
	return nil
}

// joinSessions creates or locks the sessions row of every session the batch dispatches
// into, in key order, and returns the blocked ones with their blocking delivery. The
// lock is held to the commit: a concurrent dispatch into the same session waits, so its
// delivery ids come after this one's, and a concurrent block of the session either
// comes first (this dispatch parks) or waits and then parks what this one inserted.
func (t *txn) joinSessions(ctx context.Context, batch []persistence.NewMessage) (map[string]int64, error) {
	type party struct {
		target   persistence.InstanceName
		from, to persistence.PartyName
	}
	join := make(map[string]party)
	for _, nm := range batch {
		if !nm.Dispatch {
			continue
		}
		for tg, ses := range nm.Sessions {
			if ses.Key != "" {
				join[ses.Key] = party{tg, nm.Message.From, nm.Message.To}
			}
		}
	}
	if len(join) == 0 {
		return nil, nil
	}
	blocked := make(map[string]int64)
	now := t.s.tv(t.now)
	keys := slices.Sorted(maps.Keys(join))
	for len(keys) > 0 {
		n := min(len(keys), chunkMax)
		args := make([]any, 0, n*6)
		for _, k := range keys[:n] {
			p := join[k]
			args = append(args, k, p.target, p.from, p.to, now, now)
		}
		rows, err := t.query(ctx, `INSERT INTO sessions (key, target, from_party, to_party, created_at, updated_at)
			VALUES `+repeatTuple(6, n)+`
			ON CONFLICT (key) DO UPDATE SET from_party = excluded.from_party, to_party = excluded.to_party,
				updated_at = excluded.updated_at
			RETURNING key, blocked_by`, args...)
		type row struct {
			key string
			by  *int64
		}
		rs, err := collect(rows, err, func(r rowScanner) (x row, err error) { return x, r.Scan(&x.key, &x.by) })
		if err != nil {
			return nil, fmt.Errorf("join sessions: %w", err)
		}
		for _, r := range rs {
			if r.by != nil {
				blocked[r.key] = *r.by
			}
		}
		keys = keys[n:]
	}
	return blocked, nil
}

// repeatTuple is n comma-separated tuples of k placeholders.
func repeatTuple(k, n int) string {
	one := "(" + placeholders(k) + ")"
	b := make([]byte, 0, n*(len(one)+2))
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, one...)
	}
	return string(b)
}

// deliveryNote is a history line about a delivery a dispatch inserted, whose id the
// multi-row insert does not return.
type deliveryNote struct {
	messageID int64
	target    persistence.InstanceName
	state     persistence.DeliveryState
	reason    string
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// noteDeliveries appends the notes' lines, naming each delivery by its id.
func (t *txn) noteDeliveries(ctx context.Context, notes []deliveryNote) error {
	if len(notes) == 0 {
		return nil
	}
	var ids []int64
	for _, n := range notes {
		if !slices.Contains(ids, n.messageID) {
			ids = append(ids, n.messageID)
		}
	}
	cond, arg := t.s.idList("message_id", ids)
	rows, err := t.query(ctx, `SELECT id, message_id, target FROM deliveries WHERE `+cond, arg)
	type key struct {
		m  int64
		tg persistence.InstanceName
	}
	type row struct {
		id int64
		k  key
	}
	rs, err := collect(rows, err, func(r rowScanner) (x row, err error) { return x, r.Scan(&x.id, &x.k.m, &x.k.tg) })
	if err != nil {
		return fmt.Errorf("read dispatched deliveries: %w", err)
	}
	byKey := make(map[key]int64, len(rs))
	for _, r := range rs {
		byKey[r.k] = r.id
	}
	for _, n := range notes {
		t.note(historyRow{messageID: n.messageID, deliveryID: byKey[key{n.messageID, n.target}],
			kind: persistence.HistoryDeliveryChanged, to: string(n.state), reason: n.reason})
	}
	return nil
}
