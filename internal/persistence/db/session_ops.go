package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

// maxActionIDs bounds one bulk operator action.
const maxActionIDs = persistence.MaxBulkDeliveries

// deliveryAction is one operator action over deliveries: the states it applies to, the
// update it makes, and how its history and audit name it.
type deliveryAction struct {
	name  string // the audit action: resubmit, skip
	kind  persistence.HistoryKind
	from  []persistence.DeliveryState
	to    persistence.DeliveryState
	set   func(t *txn) (string, []any)
	label string // for the error of a state it does not apply to
	// reason is the history line's reason, when the action has one to say.
	reason string
}

var resubmitAction = deliveryAction{
	name: "resubmit", kind: persistence.HistoryResubmitRequested,
	from: persistence.ActionResubmit.From(),
	to:   persistence.DeliveryQueued,
	set: func(t *txn) (string, []any) {
		now := t.s.tv(t.now)
		return `state = 'queued', next_attempt_at = ?, next_wakeup_at = ?, wakeups = 0, ack_deadline = NULL`,
			[]any{now, t.s.tv(t.now.Add(WakeupGrace))}
	},
	label: "only failed or stalled deliveries can be resubmitted",
}

var skipAction = deliveryAction{
	name: "skip", kind: persistence.HistorySkipRequested,
	from: persistence.ActionSkip.From(),
	to:   persistence.DeliverySkipped,
	set: func(*txn) (string, []any) {
		return `state = 'skipped', next_attempt_at = NULL, next_wakeup_at = NULL, ack_deadline = NULL`, nil
	},
	label: "only failed or parked deliveries can be skipped",
}

// ResubmitDeliveries attempts failed or stalled deliveries again, due now, in one
// transaction with a history line and an audit event per delivery. A blocking delivery
// of a session keeps it blocked (its parked deliveries stay parked) until it is
// delivered; it is the session's earliest unsettled delivery, so it is claimed first.
func (s *Store) ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return s.deliveryAction(ctx, resubmitAction, ids, actor, false)
}

// SkipDeliveries marks failed or parked deliveries skipped in one transaction with a
// history line and an audit event per delivery; a skipped blocking delivery unblocks its
// session, whose parked deliveries are released in order in the same transaction.
func (s *Store) SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return s.deliveryAction(ctx, skipAction, ids, actor, false)
}

// deliveryAction applies a to ids in one transaction; bulk adds the audit event that
// sums the action up (bulkAudit).
func (s *Store) deliveryAction(ctx context.Context, a deliveryAction, ids []int64, actor string, bulk bool) ([]persistence.DeliveryActionResult, error) {
	switch {
	case len(ids) == 0:
		return nil, fmt.Errorf("%s deliveries: %w", a.name, fieldMsg("ids", "no delivery ids given"))
	case len(ids) > maxActionIDs:
		return nil, fmt.Errorf("%s deliveries: %w", a.name, fieldMsg("ids", "more than %d deliveries", maxActionIDs))
	}
	// Rows are taken in id order, so two bulk actions never wait for each other in a circle.
	order := slices.Clone(ids)
	slices.Sort(order)
	order = slices.Compact(order)
	var out []persistence.DeliveryActionResult
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(actor)
		var err error
		if out, err = t.applyActions(ctx, a, ids, order); err != nil || !bulk {
			return err
		}
		return t.bulkAudit(ctx, a, len(order), out)
	})
	if err != nil {
		return nil, fmt.Errorf("%s deliveries: %w", a.name, err)
	}
	// The deliveries as the commit left them: a skip may have released others, a
	// resubmit is settled by the same transaction's session work.
	return out, nil
}

// applyActions applies a to the deliveries of order (sorted, without repeats) and
// returns the results in the order of ids.
func (t *txn) applyActions(ctx context.Context, a deliveryAction, ids, order []int64) ([]persistence.DeliveryActionResult, error) {
	done := make(map[int64]persistence.DeliveryActionResult, len(order))
	for _, id := range order {
		r, err := t.applyAction(ctx, a, id)
		if err != nil {
			return nil, err
		}
		done[id] = r
	}
	out := make([]persistence.DeliveryActionResult, len(ids))
	for i, id := range ids {
		out[i] = done[id]
	}
	return out, nil
}

// applyAction applies a to one delivery. A delivery that is missing or in a state a does
// not apply to is the result's error, not the transaction's.
func (t *txn) applyAction(ctx context.Context, a deliveryAction, id int64) (persistence.DeliveryActionResult, error) {
	r := persistence.DeliveryActionResult{ID: id}
	d, err := scanDelivery(t.queryRow(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE id = ?`+t.s.lockRows, id))
	if err != nil {
		if err = notFound(err, "delivery %d", id); errors.Is(err, persistence.ErrNotFound) {
			r.Err = err
			return r, nil
		}
		return r, err
	}
	if !slices.Contains(a.from, d.State) {
		r.Delivery = d
		r.Err = fmt.Errorf("delivery %d is %s; %s: %w", id, d.State, a.label, persistence.ErrConflict)
		return r, nil
	}
	if a.name != skipAction.name {
		if err := t.refuseErased(ctx, d.MessageID); err != nil {
			r.Delivery, r.Err = d, err
			return r, nil
		}
	}
	set, args := a.set(t)
	args = append(args, t.s.tv(t.now), id, d.State)
	rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, `+set+`, updated_at = ?
		WHERE id = ? AND state = ? RETURNING `+transitionCols, args...)
	trs, err := collect(rows, err, scanTransition)
	if err != nil {
		return r, fmt.Errorf("%s delivery %d: %w", a.name, id, err)
	}
	if len(trs) == 0 {
		return r, fmt.Errorf("delivery %d changed while it was being handled: %w", id, persistence.ErrConflict)
	}
	tr := trs[0]
	t.note(historyRow{messageID: d.MessageID, deliveryID: id, kind: a.kind,
		from: string(d.State), to: string(a.to), reason: a.reason, actor: t.actor})
	t.changed(tr, a.name+" requested", t.actor, time.Time{})
	r.Delivery = tr.d
	changes := []audit.Change{{Path: "state", Old: jsonString(string(d.State)), New: jsonString(string(a.to))}}
	if d.SessionKey != "" {
		changes = append(changes, audit.Change{Path: "session_key", New: jsonString(d.SessionKey)})
	}
	if err := t.audit(operatorCtx(ctx, t.actor), a.name, "delivery", strconv.FormatInt(id, 10),
		fmt.Sprintf("message %d to %s", d.MessageID, d.Target), changes); err != nil {
		return r, err
	}
	return r, nil
}

// ListBlockedSessions lists the blocked ordered sessions, longest blocked first, each
// with its blocking delivery, how many deliveries wait parked and since when.
func (s *Store) ListBlockedSessions(ctx context.Context, f persistence.SessionFilter) ([]persistence.BlockedSession, int, error) {
	limit, offset := page(f.ListOptions)
	where := []string{"s.blocked_by IS NOT NULL"}
	var args []any
	if f.Target != "" {
		where = append(where, "s.target = ?")
		args = append(args, string(f.Target))
	}
	if f.Party != "" {
		where = append(where, "(s.from_party = ? OR s.to_party = ?)")
		args = append(args, string(f.Party), string(f.Party))
	}
	cond := " WHERE " + strings.Join(where, " AND ")
	var out []persistence.BlockedSession
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM sessions s`+cond, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := t.query(ctx, `SELECT s.key, s.target, s.from_party, s.to_party, s.blocked_by, s.blocked_at,
				COALESCE(d.message_id, 0), COALESCE(d.state, 'failed'), COALESCE(d.last_error, ''),
				(SELECT COUNT(*) FROM deliveries p WHERE p.session_key = s.key AND p.state = 'parked'),
				(SELECT MIN(p.updated_at) FROM deliveries p WHERE p.session_key = s.key AND p.state = 'parked')
			FROM sessions s LEFT JOIN deliveries d ON d.id = s.blocked_by`+cond+`
			ORDER BY s.blocked_at, s.key LIMIT ? OFFSET ?`, append(args, limit, offset)...)
		out, err = collect(rows, err, func(r rowScanner) (b persistence.BlockedSession, err error) {
			err = r.Scan(&b.Key, &b.Target, &b.From, &b.To, &b.BlockedBy, timeCol{&b.BlockedAt},
				&b.BlockingMessage, &b.BlockingState, &b.Error, &b.Parked, nullTimeCol{&b.OldestParkedAt})
			return b, err
		})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list blocked sessions: %w", err)
	}
	return out, total, nil
}

// fillSessionPositions sets, for each delivery with a session, how many unsettled
// deliveries of its session are ahead of it.
func (t *txn) fillSessionPositions(ctx context.Context, ds []persistence.Delivery) error {
	for i := range ds {
		d := &ds[i]
		if d.SessionKey == "" {
			continue
		}
		var n int
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM deliveries e
			WHERE e.session_key = ? AND e.id < ? AND e.session_key <> '' AND e.state NOT IN ('delivered', 'skipped')`,
			d.SessionKey, d.ID).Scan(&n); err != nil {
			return fmt.Errorf("session position of delivery %d: %w", d.ID, err)
		}
		d.SessionPosition = &n
	}
	return nil
}

// CountDeliveriesByState counts every delivery by its state in one query; states
// without deliveries are left out.
func (s *Store) CountDeliveriesByState(ctx context.Context) (map[persistence.DeliveryState]int, error) {
	out := make(map[persistence.DeliveryState]int)
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT state, COUNT(*) FROM deliveries GROUP BY state`)
		type row struct {
			st persistence.DeliveryState
			n  int
		}
		rs, err := collect(rows, err, func(r rowScanner) (x row, err error) { return x, r.Scan(&x.st, &x.n) })
		for _, r := range rs {
			out[r.st] = r.n
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count deliveries by state: %w", err)
	}
	return out, nil
}
