package notification

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/alert"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Notification is one row of the notification log.
type Notification = alert.Notification

// Filter narrows a list.
type Filter = alert.Filter

var _ alert.Log = (*Runtime)(nil)

// Paging of lists, as the core's.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

func page(f Filter) (int, int) {
	limit := f.Limit
	if limit <= 0 || limit > maxLimit {
		limit = defaultLimit
	}
	return limit, max(f.Offset, 0)
}

// where builds the filter's conditions on a table alias.
func where(f Filter, alias string, withState bool) (string, []any) {
	var conds []string
	var args []any
	if f.Instance != "" {
		conds, args = append(conds, alias+"instance = ?"), append(args, f.Instance)
	}
	if withState && f.State != "" {
		conds, args = append(conds, alias+"state = ?"), append(args, string(f.State))
	}
	if f.Code != "" {
		conds, args = append(conds, alias+"code = ?"), append(args, string(f.Code))
	}
	if f.Severity != "" {
		var sevs []string
		for _, s := range alert.AllSeverities[max(f.Severity.Rank(), 0):] {
			sevs, args = append(sevs, "?"), append(args, string(s))
		}
		conds = append(conds, alias+"severity IN ("+strings.Join(sevs, ", ")+")")
	}
	if !withState && f.Unresolved {
		conds = append(conds, alias+"resolved_at IS NULL")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// ListNotifications returns a page of the notification log, newest first, and the count
// of rows the filter matches.
func (rt *Runtime) ListNotifications(ctx context.Context, f Filter) ([]Notification, int, error) {
	limit, offset := page(f)
	cond, args := where(f, "n.", true)
	var out []Notification
	var total int
	err := rt.db.Read(ctx, func(tx module.Tx) error {
		out = out[:0]
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM notifications n`+cond, args...).Scan(&total); err != nil {
			return fmt.Errorf("count notifications: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT n.id, n.alert_id, n.instance, n.kind, n.state, n.severity, n.code, a.subject_kind, a.subject_id, a.subject_name, a.summary, a.link,
			n.attempts, n.last_error, n.next_attempt_at, n.summary_id, n.created_at, n.updated_at
			FROM notifications n JOIN alerts a ON a.id = n.alert_id`+cond+` ORDER BY n.id DESC LIMIT ? OFFSET ?`,
			append(args, limit, offset)...)
		if err != nil {
			return fmt.Errorf("list notifications: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var n Notification
			var next time.Time
			var state, sev, code string
			if err := rows.Scan(&n.ID, &n.AlertID, &n.Instance, &n.Kind, &state, &sev, &code, &n.Subject.Kind, &n.Subject.ID, &n.Subject.Name, &n.Summary, &n.Link,
				&n.Attempts, &n.LastError, tx.ScanTime(&next), &n.SummaryID, tx.ScanTime(&n.CreatedAt), tx.ScanTime(&n.UpdatedAt)); err != nil {
				return fmt.Errorf("read notification: %w", err)
			}
			n.State, n.Severity, n.Code = alert.NotificationState(state), alert.Severity(sev), alert.Code(code)
			if !next.IsZero() && n.State == StateRetrying {
				n.NextAttemptAt = &next
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// ListAlerts returns a page of the alerts heard, newest first (a dashboard card asks for
// the recent critical ones), and the count the filter matches. Filter.State is ignored.
func (rt *Runtime) ListAlerts(ctx context.Context, f Filter) ([]alert.Alert, int, error) {
	limit, offset := page(f)
	cond, args := where(f, "", false)
	var out []alert.Alert
	var total int
	err := rt.db.Read(ctx, func(tx module.Tx) error {
		out = out[:0]
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM alerts`+cond, args...).Scan(&total); err != nil {
			return fmt.Errorf("count alerts: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT body, resolved_at FROM alerts`+cond+` ORDER BY raised_at DESC, id DESC LIMIT ? OFFSET ?`,
			append(args, limit, offset)...)
		if err != nil {
			return fmt.Errorf("list alerts: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var body string
			var resolved time.Time
			if err := rows.Scan(&body, tx.ScanTime(&resolved)); err != nil {
				return fmt.Errorf("read alert: %w", err)
			}
			a, err := alert.Decode([]byte(body))
			if err != nil {
				return err
			}
			if !resolved.IsZero() {
				a.ResolvedAt = &resolved
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// Test raises a notification_test alert addressed to one notifier instance and returns
// its id. The alert goes over the bus, so the instance gets it in whichever process it
// runs; its row in the log shows what came of it.
func (rt *Runtime) Test(ctx context.Context, instance persistence.InstanceName, actor string) (string, error) {
	rec, err := rt.core.Store.GetPluginConfig(ctx, instance)
	if err != nil {
		return "", err
	}
	if rec.Type != persistence.PluginNotificationWebhook {
		return "", &persistence.FieldError{Field: "instance", Message: fmt.Sprintf("%s is not a notification-webhook instance", instance)}
	}
	if !rec.Enabled {
		return "", &persistence.FieldError{Field: "instance", Message: fmt.Sprintf("%s is disabled", instance)}
	}
	if rt.core.Alerts == nil {
		return "", fmt.Errorf("alerts are not wired in this process")
	}
	a := alert.Alert{
		ID: alert.NewID(), Code: alert.NotificationTest, Severity: alert.SeverityInfo,
		Subject:  alert.Subject{Kind: "plugin", ID: string(instance), Name: string(instance)},
		Summary:  "Test notification of " + string(instance),
		Details:  []alert.Detail{{Label: "Requested by", Value: actor}},
		Link:     "/ui/notifications?instance=" + string(instance),
		Instance: string(instance),
	}
	a.DedupeKey = "notification_test:" + a.ID
	rt.core.Alerts.Raise(a)
	return a.ID, nil
}
