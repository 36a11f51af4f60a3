package notification

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"wharf/internal/alert"
	"wharf/internal/module"
)

// State is where a notification row stands.
type State = alert.NotificationState

// The states, named for this package's code.
const (
	StateQueued     = alert.NotificationQueued
	StateDelivering = alert.NotificationDelivering
	StateRetrying   = alert.NotificationRetrying
	StateDelivered  = alert.NotificationDelivered
	StateFailed     = alert.NotificationFailed
	StateHeld       = alert.NotificationHeld
	StateSuppressed = alert.NotificationSuppressed
)

// Row kinds: an alert, or the summary of the alerts the rate limit held.
const (
	kindAlert   = "alert"
	kindSummary = "summary"
)

// MaxAge is how old an alert may be and still be sent; an older queued row fails
// without a request.
const MaxAge = 24 * time.Hour

// Retention of the notification log.
const (
	RetentionAge  = 30 * 24 * time.Hour
	RetentionRows = 10000
)

// insertAlert records a once; false when it was recorded before (heard twice).
func insertAlert(ctx context.Context, tx module.Tx, a alert.Alert) (bool, error) {
	body, err := alert.Encode(a)
	if err != nil {
		return false, err
	}
	res, err := tx.Exec(ctx, `INSERT INTO alerts (id, raised_at, severity, code, subject_kind, subject_id, subject_name,
		summary, dedupe_key, link, instance, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		a.ID, tx.Time(a.Time), string(a.Severity), string(a.Code), a.Subject.Kind, a.Subject.ID, a.Subject.Name,
		a.Summary, a.DedupeKey, a.Link, a.Instance, string(body))
	if err != nil {
		return false, fmt.Errorf("record alert %s: %w", a.ID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// insertRow adds a's notification row for an instance in the given state.
func insertRow(ctx context.Context, tx module.Tx, a alert.Alert, instance, kind string, state State, reason string, now time.Time) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO notifications (alert_id, instance, kind, state, severity, code, dedupe_key,
		created_at, updated_at, attempts, claim_token, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '', ?)
		ON CONFLICT (alert_id, instance) DO NOTHING RETURNING id`,
		a.ID, instance, kind, string(state), string(a.Severity), string(a.Code), a.DedupeKey, tx.Time(now), tx.Time(now), reason).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue alert %s for %s: %w", a.ID, instance, err)
	}
	return id, nil
}

// decide applies an instance's cooldown and rate limit to an alert that passed its
// filters: queued, suppressed (the dedupe key was notified within the cooldown) or held
// (the window's limit is reached).
func decide(ctx context.Context, tx module.Tx, cfg *Config, instance string, a alert.Alert, now time.Time) (State, string, error) {
	if a.Code == alert.NotificationTest {
		return StateQueued, "", nil
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM notifications WHERE alert_id = ? AND instance = ?`, a.ID, instance).Scan(&have); err != nil {
		return "", "", fmt.Errorf("check for a row of alert %s: %w", a.ID, err)
	}
	if have > 0 {
		return StateQueued, "", nil // heard before: the insert is a no-op
	}
	if cfg.Cooldown > 0 {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM notifications WHERE instance = ? AND dedupe_key = ?
			AND created_at > ? AND state NOT IN ('suppressed')`,
			instance, a.DedupeKey, tx.Time(now.Add(-time.Duration(cfg.Cooldown)))).Scan(&n); err != nil {
			return "", "", fmt.Errorf("check cooldown: %w", err)
		}
		if n > 0 {
			return StateSuppressed, "cooldown: notified within " + time.Duration(cfg.Cooldown).String(), nil
		}
	}
	var sent int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM notifications WHERE instance = ? AND kind = 'alert'
		AND created_at > ? AND state NOT IN ('held', 'suppressed')`,
		instance, tx.Time(now.Add(-time.Duration(cfg.RateWindow)))).Scan(&sent); err != nil {
		return "", "", fmt.Errorf("check rate limit: %w", err)
	}
	if sent >= cfg.RateLimit {
		return StateHeld, fmt.Sprintf("rate limit: %d per %s reached", cfg.RateLimit, time.Duration(cfg.RateWindow)), nil
	}
	return StateQueued, "", nil
}

// heldSummary is the summary alert of an instance's held rows, when the oldest of them
// has waited a whole window; ok false when there is nothing to sum up yet.
func heldSummary(ctx context.Context, tx module.Tx, instance string, window time.Duration, now time.Time) (a alert.Alert, ids []int64, ok bool, err error) {
	rows, err := tx.Query(ctx, `SELECT id, severity, code, created_at FROM notifications
		WHERE instance = ? AND state = 'held' AND summary_id IS NULL ORDER BY id`, instance)
	if err != nil {
		return a, nil, false, fmt.Errorf("read held notifications: %w", err)
	}
	defer rows.Close()
	counts := map[alert.Code]int{}
	top := alert.SeverityInfo
	var first time.Time
	for rows.Next() {
		var id int64
		var sev, code string
		var at time.Time
		if err := rows.Scan(&id, &sev, &code, tx.ScanTime(&at)); err != nil {
			return a, nil, false, fmt.Errorf("read held notifications: %w", err)
		}
		if first.IsZero() {
			first = at
		}
		ids = append(ids, id)
		counts[alert.Code(code)]++
		if s := alert.Severity(sev); s.Rank() > top.Rank() {
			top = s
		}
	}
	if err := rows.Err(); err != nil {
		return a, nil, false, err
	}
	if len(ids) == 0 || now.Sub(first) < window {
		return a, nil, false, nil
	}
	var details []alert.Detail
	for _, c := range alert.Codes {
		if n := counts[c.Code]; n > 0 {
			details = append(details, alert.Detail{Label: c.Label, Value: strconv.Itoa(n)})
		}
	}
	noun := "alerts were"
	if len(ids) == 1 {
		noun = "alert was"
	}
	a = alert.Alert{
		Time: now, Severity: top, Code: alert.AlertsHeld,
		Subject:   alert.Subject{Kind: "plugin", ID: instance, Name: instance},
		Summary:   fmt.Sprintf("%d %s held back by the rate limit of %s", len(ids), noun, instance),
		Details:   details,
		DedupeKey: "alerts_held:" + instance + ":" + strconv.FormatInt(ids[0], 10),
		Link:      "/ui/notifications?instance=" + instance,
		Instance:  instance,
	}
	return a, ids, true, a.Normalize(now)
}

// idList renders ids for an IN list; they are integers the query read, never input.
func idList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}
