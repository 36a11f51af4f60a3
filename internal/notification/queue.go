package notification

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"wharf/internal/alert"
	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
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

// queue is the notification rows of the delivery engine's notifier workers.
type queue struct {
	db  module.SQL
	now func() time.Time
	// announce, when set, publishes the rows an outcome changed.
	announce func(ids []int64)
}

var _ delivery.Queue = (*queue)(nil)

func (q *queue) lockSuffix() string {
	if q.db.Dialect() == "postgres" {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// ClaimDeliveries claims up to n rows of the instance that are due: queued, retrying
// past their time, or delivering with a lease that ran out. The claim is a Delivery
// whose ID is the row's; the Message is zero.
func (q *queue) ClaimDeliveries(ctx context.Context, target persistence.InstanceName, n int, lease time.Duration, now time.Time) ([]persistence.Claim, error) {
	var out []persistence.Claim
	err := q.db.Write(ctx, func(tx module.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT id FROM notifications WHERE instance = ? AND (state = 'queued'
			OR (state = 'retrying' AND next_attempt_at <= ?) OR (state = 'delivering' AND lease_until <= ?))
			ORDER BY id LIMIT ?`+q.lockSuffix(), string(target), tx.Time(now), tx.Time(now), n)
		if err != nil {
			return fmt.Errorf("find due notifications: %w", err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		prefix := token()
		for _, id := range ids {
			tok := prefix + strconv.FormatInt(id, 10)
			var attempts int
			var created time.Time
			err := tx.QueryRow(ctx, `UPDATE notifications SET state = 'delivering', claim_token = ?, lease_until = ?,
				attempts = attempts + 1, updated_at = ? WHERE id = ? AND state IN ('queued', 'retrying', 'delivering')
				RETURNING attempts, created_at`, tok, tx.Time(now.Add(lease)), tx.Time(now), id).Scan(&attempts, tx.ScanTime(&created))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("claim notification %d: %w", id, err)
			}
			out = append(out, persistence.Claim{Delivery: persistence.Delivery{
				ID: id, Target: target, State: persistence.DeliveryDelivering, Attempts: attempts, ClaimToken: tok, CreatedAt: created,
			}})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim notifications of %s: %w", target, err)
	}
	return out, nil
}

func token() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-"
}

// RenewLease extends a claim; ErrLostClaim when the token no longer holds it.
func (q *queue) RenewLease(ctx context.Context, id int64, tok string, until time.Time) error {
	return q.db.Write(ctx, func(tx module.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE notifications SET lease_until = ? WHERE id = ? AND claim_token = ? AND state = 'delivering'`,
			tx.Time(until), id, tok)
		if err != nil {
			return fmt.Errorf("renew notification %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return persistence.ErrLostClaim
		}
		return nil
	})
}

// CompleteDeliveries records outcomes, each conditional on its claim.
func (q *queue) CompleteDeliveries(ctx context.Context, cs []persistence.Completion) ([]error, error) {
	results := make([]error, len(cs))
	err := q.db.Write(ctx, func(tx module.Tx) error {
		for i, c := range cs {
			results[i] = nil
			if c.Token == "" {
				continue // stages of a lost claim; a notification stores none
			}
			at := c.At
			if at.IsZero() {
				at = tx.Now()
			}
			var state State
			var next any
			switch c.Kind {
			case persistence.OutcomeDelivered:
				state = StateDelivered
			case persistence.OutcomeRetry:
				state, next = StateRetrying, tx.Time(c.NextAttemptAt)
			default:
				state = StateFailed
			}
			res, err := tx.Exec(ctx, `UPDATE notifications SET state = ?, next_attempt_at = ?, lease_until = NULL, claim_token = '',
				last_error = ?, updated_at = ? WHERE id = ? AND claim_token = ? AND state = 'delivering'`,
				string(state), next, persistence.SanitizeReason(c.Reason), tx.Time(at), c.DeliveryID, c.Token)
			if err != nil {
				return fmt.Errorf("record notification %d: %w", c.DeliveryID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				results[i] = fmt.Errorf("notification %d: %w", c.DeliveryID, persistence.ErrLostClaim)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if q.announce != nil {
		var ids []int64
		for i, c := range cs {
			if results[i] == nil && c.Token != "" {
				ids = append(ids, c.DeliveryID)
			}
		}
		q.announce(ids)
	}
	return results, nil
}

// ReleaseDeliveries hands interrupted claims back, due at once and not counted.
func (q *queue) ReleaseDeliveries(ctx context.Context, rs []persistence.Release) error {
	return q.db.Write(ctx, func(tx module.Tx) error {
		for _, r := range rs {
			if _, err := tx.Exec(ctx, `UPDATE notifications SET state = 'queued', attempts = attempts - 1, lease_until = NULL,
				claim_token = '', updated_at = ? WHERE id = ? AND claim_token = ? AND state = 'delivering'`,
				tx.Time(tx.Now()), r.DeliveryID, r.Token); err != nil {
				return fmt.Errorf("release notification %d: %w", r.DeliveryID, err)
			}
		}
		return nil
	})
}

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
