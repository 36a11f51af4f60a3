package notification

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/module"
)

// An alert heard while the database is out of reach (database_unavailable first of all)
// cannot be recorded, so the runtime holds it in memory and records it, in the order
// heard, once the database answers again; its notifications are sent from then on.
const (
	// maxHeld bounds the alerts held; further ones are dropped and logged.
	maxHeld = 1000
	// heldRetryInterval is the time between two tries to record the held alerts.
	heldRetryInterval = time.Second
)

// heldAlerts is the runtime's list of alerts not recorded yet, oldest first.
type heldAlerts struct {
	mu      sync.Mutex
	list    []alert.Alert
	dropped int
}

// hear records an alert from the bus, or holds it when it cannot be recorded now. While
// alerts are held, a new one waits behind them, so a resolution is never recorded before
// the alert it resolves.
func (rt *Runtime) hear(ctx context.Context, a alert.Alert) {
	rt.held.mu.Lock()
	waiting := len(rt.held.list) > 0
	if waiting {
		rt.holdLocked(a)
	}
	rt.held.mu.Unlock()
	if waiting {
		return
	}
	if err := rt.Accept(ctx, a); err != nil {
		rt.log.Warn("alert not recorded; holding it until the database answers", "alert_id", a.ID, "code", string(a.Code), "err", err)
		rt.held.mu.Lock()
		rt.holdLocked(a)
		rt.held.mu.Unlock()
	}
}

func (rt *Runtime) holdLocked(a alert.Alert) {
	if len(rt.held.list) >= maxHeld {
		rt.held.dropped++
		if rt.held.dropped == 1 || rt.held.dropped%100 == 0 {
			rt.log.Error("alert dropped: too many held", "alert_id", a.ID, "code", string(a.Code), "dropped_total", rt.held.dropped)
		}
		return
	}
	rt.held.list = append(rt.held.list, a)
}

// recordHeld records the held alerts in order and stops at the first that still fails.
func (rt *Runtime) recordHeld(ctx context.Context) {
	for {
		rt.held.mu.Lock()
		if len(rt.held.list) == 0 {
			rt.held.mu.Unlock()
			return
		}
		a := rt.held.list[0]
		rt.held.mu.Unlock()
		if err := rt.Accept(ctx, a); err != nil {
			return
		}
		rt.held.mu.Lock()
		rt.held.list = rt.held.list[1:]
		n := len(rt.held.list)
		rt.held.mu.Unlock()
		if n == 0 {
			rt.log.Info("held alerts recorded")
		}
	}
}

// Held counts the alerts heard and not recorded yet.
func (rt *Runtime) Held() int {
	rt.held.mu.Lock()
	defer rt.held.mu.Unlock()
	return len(rt.held.list)
}

// resolve marks the unresolved alerts of r's dedupe key raised before r resolved at r's
// time, and wakes the pages that show them.
func (rt *Runtime) resolve(ctx context.Context, r alert.Alert) error {
	var ids []int64
	resolved := false
	err := rt.db.Write(ctx, func(tx module.Tx) error {
		ids, resolved = ids[:0], false
		res, err := tx.Exec(ctx, `UPDATE alerts SET resolved_at = ? WHERE dedupe_key = ? AND resolved_at IS NULL AND raised_at <= ?`,
			tx.Time(r.Time), r.DedupeKey, tx.Time(r.Time))
		if err != nil {
			return fmt.Errorf("resolve alerts %s: %w", r.DedupeKey, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		resolved = true
		rows, err := tx.Query(ctx, `SELECT n.id FROM notifications n JOIN alerts a ON a.id = n.alert_id
			WHERE a.dedupe_key = ? AND a.resolved_at = ?`, r.DedupeKey, tx.Time(r.Time))
		if err != nil {
			return fmt.Errorf("list notifications of resolved alerts: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return fmt.Errorf("read notification: %w", err)
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	if resolved && rt.core.Bus != nil {
		// The rows themselves did not change, but the pages that show their alerts did;
		// an empty list still wakes them.
		b, _ := json.Marshal(map[string][]int64{"ids": append([]int64{}, ids...)})
		_ = rt.core.Bus.Publish(ChangedSubject, b)
	}
	return nil
}
