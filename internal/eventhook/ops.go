package eventhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"wharf/internal/events"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/stdwebhook"
)

// Create saves a new subscription from its config, which names no secret: the secret is
// generated here and returned this once (it is sealed at rest and never shown again).
func (rt *Runtime) Create(ctx context.Context, body []byte) (persistence.PluginConfig, string, error) {
	fields, err := decodeObject(body)
	if err != nil {
		return persistence.PluginConfig{}, "", err
	}
	for _, f := range []string{"secret", "previous_secret", "previous_secret_until"} {
		if _, ok := fields[f]; ok {
			return persistence.PluginConfig{}, "", fieldErr(f, "leave it out: the secret is generated and shown once")
		}
	}
	secret := stdwebhook.NewSecret()
	fields["secret"], _ = json.Marshal(secret)
	withSecret, err := json.Marshal(fields)
	if err != nil {
		return persistence.PluginConfig{}, "", fmt.Errorf("encode event webhook config: %w", err)
	}
	rec, err := records.SavePluginConfig(ctx, rt.core.Store, rt.core.Sealer, persistence.PluginEventWebhook, "", withSecret)
	if err != nil {
		return persistence.PluginConfig{}, "", err
	}
	rt.invalidateSubscriptions()
	return rec, secret, nil
}

// Rotate gives a subscription a new generated secret, returned this once; the previous
// one goes on signing beside it for RotationOverlap, so the receiver can switch without
// refusing a request. The next attempt signs with both, without a restart.
func (rt *Runtime) Rotate(ctx context.Context, name persistence.InstanceName) (string, time.Time, error) {
	rec, c, err := rt.load(ctx, name)
	if err != nil {
		return "", time.Time{}, err
	}
	secret := stdwebhook.NewSecret()
	until := rt.clock().Add(RotationOverlap).Truncate(time.Second)
	c.PreviousSecret, c.PreviousSecretUntil, c.Secret = c.Secret, &until, secret
	out, err := module.Encode(module.Instance{Name: rec.Name, Type: rec.Type, Enabled: rec.Enabled, Config: c}, rt.core.Sealer)
	if err != nil {
		return "", time.Time{}, err
	}
	if _, err := rt.core.Store.UpdatePluginConfig(ctx, out); err != nil {
		return "", time.Time{}, fmt.Errorf("rotate the secret of %s: %w", name, err)
	}
	return secret, until, nil
}

// load reads a subscription's config with its secrets open; ErrNotFound when no event
// webhook has the name.
func (rt *Runtime) load(ctx context.Context, name persistence.InstanceName) (persistence.PluginConfig, *Config, error) {
	rec, err := rt.core.Store.GetPluginConfig(ctx, name)
	if err != nil {
		return rec, nil, err
	}
	if rec.Type != persistence.PluginEventWebhook {
		return rec, nil, fmt.Errorf("no event webhook named %s: %w", name, persistence.ErrNotFound)
	}
	in, err := module.Load(rec, rt.core.Sealer)
	if err != nil {
		return rec, nil, err
	}
	c, ok := in.Config.(*Config)
	if !ok {
		return rec, nil, fmt.Errorf("event webhook %s: config is %T", name, in.Config)
	}
	return rec, c, nil
}

// Test queues a webhook.test event for the subscription, sent like any other (signed,
// retried); it returns the row's id in the delivery log.
func (rt *Runtime) Test(ctx context.Context, name persistence.InstanceName) (int64, error) {
	if err := rt.exists(ctx, name); err != nil {
		return 0, err
	}
	now := rt.clock()
	body, err := json.Marshal(testEvent{Type: events.Test, Timestamp: now, Data: testData{Instance: name}})
	if err != nil {
		return 0, fmt.Errorf("encode the test event: %w", err)
	}
	var id int64
	err = rt.db.Write(ctx, func(tx module.Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO event_webhook_deliveries (instance, event_id, type, message_id, body,
			state, attempts, claim_token, last_error, created_at, updated_at)
			VALUES (?, NULL, ?, NULL, ?, 'queued', 0, '', '', ?, ?) RETURNING id`,
			string(name), string(events.Test), string(body), tx.Time(now), tx.Time(now)).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("queue a test event for %s: %w", name, err)
	}
	rt.wakeInstances([]string{string(name)})
	return id, nil
}

type testEvent struct {
	Type      events.Type `json:"type"`
	Timestamp time.Time   `json:"timestamp"`
	Data      testData    `json:"data"`
}

type testData struct {
	Instance persistence.InstanceName `json:"instance"`
}

// List returns every subscription, by name, with its health.
func (rt *Runtime) List(ctx context.Context) ([]events.Subscription, error) {
	recs, err := rt.core.Store.ListPluginConfigs(ctx, persistence.PluginEventWebhook)
	if err != nil {
		return nil, fmt.Errorf("list event webhooks: %w", err)
	}
	out := make([]events.Subscription, 0, len(recs))
	for _, r := range recs {
		var c Config
		if err := json.Unmarshal(r.Config, &c); err != nil {
			return nil, fmt.Errorf("event webhook %s: stored config: %w", r.Name, err)
		}
		h, err := rt.health(ctx, string(r.Name))
		if err != nil {
			return nil, err
		}
		out = append(out, events.Subscription{Name: r.Name, Enabled: r.Enabled, Events: c.Events, Party: c.Party, Health: h})
	}
	slices.SortFunc(out, func(a, b events.Subscription) int { return compare(a.Name, b.Name) })
	return out, nil
}

func compare(a, b persistence.InstanceName) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
