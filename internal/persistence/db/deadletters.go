package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

// redeliverAction is the bulk form of Redeliver: a failed delivery sent again under the
// identity it already used. Parked deliveries are not among its states, so a bulk
// redeliver never lets one overtake its session.
var redeliverAction = deliveryAction{
	name: "redeliver", kind: persistence.HistoryRedeliverRequested,
	from:   redeliverable,
	to:     persistence.DeliveryQueued,
	set:    resubmitAction.set,
	label:  "only failed, stalled, retrying or delivered deliveries can be redelivered",
	reason: persistence.ResendSame.Reason(),
}

// bulkActions maps each bulk action to its delivery action.
var bulkActions = map[persistence.DeliveryAction]deliveryAction{
	persistence.ActionRedeliver: redeliverAction,
	persistence.ActionResubmit:  resubmitAction,
	persistence.ActionSkip:      skipAction,
}

// ActOnDeliveries applies an operator's bulk action to ids in one transaction: each
// delivery gets its history line and audit event as with the single action, and one
// more audit event names who acted and on how many.
func (s *Store) ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	a, ok := bulkActions[action]
	if !ok {
		return nil, fmt.Errorf("act on deliveries: %w", fieldMsg("action", "unknown action %q", action))
	}
	return s.deliveryAction(ctx, a, ids, actor, true)
}

// bulkAudit writes the event that sums up a bulk action: requested distinct ids, how many
// it changed, and which.
func (t *txn) bulkAudit(ctx context.Context, a deliveryAction, requested int, res []persistence.DeliveryActionResult) error {
	var acted []int64
	seen := make(map[int64]bool, len(res))
	for _, r := range res {
		if r.Err == nil && !seen[r.ID] {
			seen[r.ID] = true
			acted = append(acted, r.ID)
		}
	}
	ids, err := json.Marshal(acted)
	if err != nil {
		return fmt.Errorf("audit bulk %s: %w", a.name, err)
	}
	changes := []audit.Change{
		{Path: "requested", New: json.RawMessage(fmt.Sprint(requested))},
		{Path: "count", New: json.RawMessage(fmt.Sprint(len(acted)))},
		{Path: "delivery_ids", New: ids},
	}
	return t.audit(operatorCtx(ctx, t.actor), "bulk_"+a.name, "delivery", "",
		fmt.Sprintf("%d of %d deliveries", len(acted), requested), changes)
}

// deadLetterWhere is the condition of a dead-letter filter over deliveries d joined with
// their messages m; one line per filter.
func (s *Store) deadLetterWhere(f persistence.DeadLetterFilter) (string, []any) {
	where := []string{"d.state IN ('failed', 'parked')"}
	var args []any
	add := func(on bool, cond string, a ...any) {
		if on {
			where = append(where, cond)
			args = append(args, a...)
		}
	}
	add(f.State != "", "d.state = ?", string(f.State))
	add(f.Target != "", "d.target = ?", string(f.Target))
	add(f.Party != "", "(m.from_party = ? OR m.to_party = ?)", string(f.Party), string(f.Party))
	add(f.Session != "", "d.session_key = ?", f.Session)
	add(f.ErrorClass != "", "d.error_class = ?", f.ErrorClass)
	add(!f.CreatedBefore.IsZero(), "d.created_at < ?", s.tv(f.CreatedBefore))
	add(!f.CreatedAfter.IsZero(), "d.created_at >= ?", s.tv(f.CreatedAfter))
	if len(f.IDs) > 0 {
		cond, arg := s.idList("d.id", f.IDs)
		add(true, cond, arg)
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

// ListDeadLetters lists failed and parked deliveries, oldest first (a session's in its
// order), with their messages' parties and file names and the total count.
func (s *Store) ListDeadLetters(ctx context.Context, f persistence.DeadLetterFilter) ([]persistence.DeadLetter, int, error) {
	if f.State != "" && f.State != persistence.DeliveryFailed && f.State != persistence.DeliveryParked {
		return nil, 0, fmt.Errorf("list dead letters: %w", fieldMsg("state", "must be failed or parked"))
	}
	if len(f.IDs) > persistence.MaxBulkDeliveries {
		return nil, 0, fmt.Errorf("list dead letters: %w", fieldMsg("ids", "more than %d deliveries", persistence.MaxBulkDeliveries))
	}
	limit, offset := page(f.ListOptions)
	cond, args := s.deadLetterWhere(f)
	from := ` FROM deliveries d JOIN messages m ON m.id = d.message_id`
	var out []persistence.DeadLetter
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*)`+from+cond, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := t.query(ctx, `SELECT `+prefixCols("d.", deliveryCols)+`, m.from_party, m.to_party, m.original_file_name`+
			from+cond+` ORDER BY d.created_at, d.id LIMIT ? OFFSET ?`, append(args, limit, offset)...)
		out, err = collect(rows, err, func(r rowScanner) (x persistence.DeadLetter, err error) {
			err = r.Scan(append(deliveryDests(&x.Delivery), &x.From, &x.To, &x.FileName)...)
			x.AgeSeconds = int64(t.now.Sub(x.CreatedAt).Seconds())
			return x, err
		})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list dead letters: %w", err)
	}
	return out, total, nil
}
