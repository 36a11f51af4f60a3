package eventhook

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"wharf/internal/alert"
	"wharf/internal/audit"
	"wharf/internal/events"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

func (rt *Runtime) health(ctx context.Context, name string) (events.WebhookHealth, error) {
	var h events.WebhookHealth
	err := rt.db.Read(ctx, func(tx module.Tx) error {
		var err error
		h, err = readHealth(ctx, tx, name)
		return err
	})
	return h, err
}

func readHealth(ctx context.Context, tx module.Tx, name string) (events.WebhookHealth, error) {
	var failing, success, disabled time.Time
	err := tx.QueryRow(ctx, `SELECT failing_since, last_success_at, disabled_at FROM event_webhook_health WHERE instance = ?`, name).
		Scan(tx.ScanTime(&failing), tx.ScanTime(&success), tx.ScanTime(&disabled))
	if errors.Is(err, sql.ErrNoRows) {
		return events.WebhookHealth{}, nil
	}
	if err != nil {
		return events.WebhookHealth{}, fmt.Errorf("read the health of event webhook %s: %w", name, err)
	}
	return events.WebhookHealth{FailingSince: timePtr(failing), LastSuccessAt: timePtr(success), DisabledAt: timePtr(disabled)}, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// outcomes keeps the subscription's health in the transaction that records attempts: a
// success ends a failing spell; a failure starts one, and one that has lasted the
// subscription's disable_after disables it, with an audit event and, after the commit,
// the event_webhook_disabled alert.
func (s *Subscriber) outcomes(ctx context.Context, tx module.Tx, done []persistence.Completion) (func(), error) {
	now := s.rt.clock()
	ok := false
	for _, c := range done {
		ok = ok || c.Kind == persistence.OutcomeDelivered
	}
	if _, err := tx.Exec(ctx, `INSERT INTO event_webhook_health (instance) VALUES (?) ON CONFLICT (instance) DO NOTHING`, s.name); err != nil {
		return nil, fmt.Errorf("event webhook %s health: %w", s.name, err)
	}
	if ok {
		_, err := tx.Exec(ctx, `UPDATE event_webhook_health SET failing_since = NULL, last_success_at = ? WHERE instance = ?`, tx.Time(now), s.name)
		if err != nil {
			return nil, fmt.Errorf("event webhook %s health: %w", s.name, err)
		}
		return nil, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE event_webhook_health SET failing_since = ? WHERE instance = ? AND failing_since IS NULL`,
		tx.Time(now), s.name); err != nil {
		return nil, fmt.Errorf("event webhook %s health: %w", s.name, err)
	}
	h, err := readHealth(ctx, tx, s.name)
	if err != nil {
		return nil, err
	}
	limit := time.Duration(s.cfg.DisableAfter)
	if h.DisabledAt != nil || h.FailingSince == nil || now.Sub(*h.FailingSince) < limit {
		return nil, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE event_webhook_health SET disabled_at = ? WHERE instance = ?`, tx.Time(now), s.name); err != nil {
		return nil, fmt.Errorf("disable event webhook %s: %w", s.name, err)
	}
	// The worker disables it, whoever runs the process.
	ctx = audit.WithActor(ctx, audit.SystemActor)
	if err := tx.Audit(ctx, "disable", "event_webhook", s.name, s.name,
		map[string]any{"disabled": false}, map[string]any{"disabled": true}); err != nil {
		return nil, err
	}
	failingSince := *h.FailingSince
	return func() {
		s.rt.log.Warn("event webhook disabled: its endpoint kept failing", "instance", s.name, "failing_since", failingSince)
		s.rt.raise(disabledAlert(s.name, failingSince, limit, now))
	}, nil
}

func disabledAlert(name string, since time.Time, limit time.Duration, now time.Time) alert.Alert {
	return alert.Alert{
		Time: now, Severity: alert.EventWebhookDisabled.Info().Severity, Code: alert.EventWebhookDisabled,
		Subject: alert.Subject{Kind: "plugin", ID: name, Name: name},
		Summary: fmt.Sprintf("Event webhook %s disabled: its endpoint failed for %s without a success", name, limit),
		Details: []alert.Detail{{Label: "Failing since", Value: since.UTC().Format(time.RFC3339)}},
		Link:    "/ui/event-webhooks/" + name,
	}
}

func (rt *Runtime) raise(a alert.Alert) {
	if rt.core.Alerts != nil {
		rt.core.Alerts.Raise(a)
	}
}

// Enable puts a disabled subscription back to work: its waiting rows are claimed again
// and its failing spell starts afresh. Enabling one that is not disabled changes
// nothing; ErrNotFound when no event webhook has the name.
func (rt *Runtime) Enable(ctx context.Context, name persistence.InstanceName) (bool, error) {
	if err := rt.exists(ctx, name); err != nil {
		return false, err
	}
	changed := false
	err := rt.db.Write(ctx, func(tx module.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE event_webhook_health SET disabled_at = NULL, failing_since = NULL
			WHERE instance = ? AND disabled_at IS NOT NULL`, string(name))
		if err != nil {
			return fmt.Errorf("enable event webhook %s: %w", name, err)
		}
		n, _ := res.RowsAffected()
		changed = n > 0
		if !changed {
			return nil
		}
		return tx.Audit(ctx, "enable", "event_webhook", string(name), string(name),
			map[string]any{"disabled": true}, map[string]any{"disabled": false})
	})
	if err != nil {
		return false, err
	}
	if changed {
		rt.raise(alert.Resolution(alert.EventWebhookDisabled, alert.Subject{Kind: "plugin", ID: string(name), Name: string(name)}))
		rt.wakeInstances([]string{string(name)})
	}
	return changed, nil
}

// exists checks that name is an event-webhook instance.
func (rt *Runtime) exists(ctx context.Context, name persistence.InstanceName) error {
	rec, err := rt.core.Store.GetPluginConfig(ctx, name)
	if err != nil {
		return err
	}
	if rec.Type != persistence.PluginEventWebhook {
		return fmt.Errorf("no event webhook named %s: %w", name, persistence.ErrNotFound)
	}
	return nil
}
