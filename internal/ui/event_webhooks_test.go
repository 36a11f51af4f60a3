package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/events"
	"wharf/internal/persistence"
)

// fakeEventWebhooks stands in for the module's runtime: a map of subscriptions, a log per
// subscription, and the refusals a config can earn (the module's own rules are tested
// with the module).
type fakeEventWebhooks struct {
	mu      sync.Mutex
	subs    map[persistence.InstanceName]*events.Subscription
	log     map[persistence.InstanceName][]events.WebhookDelivery
	secrets int
}

func newFakeEventWebhooks() *fakeEventWebhooks {
	return &fakeEventWebhooks{subs: map[persistence.InstanceName]*events.Subscription{}, log: map[persistence.InstanceName][]events.WebhookDelivery{}}
}

func (f *fakeEventWebhooks) List(context.Context) ([]events.Subscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []events.Subscription
	for _, s := range f.subs {
		out = append(out, *s)
	}
	return out, nil
}

func (f *fakeEventWebhooks) Create(_ context.Context, body []byte) (persistence.PluginConfig, string, error) {
	var in struct {
		Name   string   `json:"name"`
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Party  string   `json:"party"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return persistence.PluginConfig{}, "", err
	}
	var errs persistence.FieldErrors
	name, err := persistence.ParseInstanceName(in.Name)
	if err != nil {
		errs.Add("name", err.Error())
	}
	if !strings.HasPrefix(in.URL, "https://") {
		errs.Add("url", "must be an https URL")
	}
	patterns, err := events.ParsePatterns(strings.Join(in.Events, ","))
	if err != nil {
		errs.Add("events", err.Error())
	}
	if err := errs.Err(); err != nil {
		return persistence.PluginConfig{}, "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets++
	f.subs[name] = &events.Subscription{Name: name, Enabled: true, Events: patterns, Party: persistence.PartyName(in.Party)}
	return persistence.PluginConfig{Name: name, Type: persistence.PluginEventWebhook}, fmt.Sprintf("whsec_secret%d", f.secrets), nil
}

func (f *fakeEventWebhooks) Rotate(_ context.Context, name persistence.InstanceName) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets++
	return fmt.Sprintf("whsec_secret%d", f.secrets), time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), nil
}

func (f *fakeEventWebhooks) Test(_ context.Context, name persistence.InstanceName) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := int64(len(f.log[name]) + 1)
	f.log[name] = append([]events.WebhookDelivery{{ID: id, Type: string(events.Test), State: events.WebhookQueued,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}}, f.log[name]...)
	return id, nil
}

func (f *fakeEventWebhooks) Enable(_ context.Context, name persistence.InstanceName) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.subs[name]
	was := s.Health.DisabledAt != nil
	s.Health.DisabledAt = nil
	return was, nil
}

func (f *fakeEventWebhooks) Deliveries(_ context.Context, name persistence.InstanceName, _ events.WebhookState, limit, offset int) ([]events.WebhookDelivery, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := f.log[name]
	return rows[min(offset, len(rows)):min(offset+limit, len(rows))], len(rows), nil
}

// The Event webhooks pages: an empty list, a subscription created with the secret shown
// once, its page with the test button's row in the log, enabling a disabled one, the
// rotation's secret page, and 404 for an unknown name.
func TestEventWebhookPages(t *testing.T) {
	fake := newFakeEventWebhooks()
	ab := setupAccounts(t, func(d *Deps) { d.EventWebhooks = fake })
	pb := ab.pagesBundle
	if body := pb.get(t, "/ui/event-webhooks", http.StatusOK); !strings.Contains(body, "No subscription yet.") {
		t.Fatalf("empty list:\n%s", body)
	}
	pb.get(t, "/ui/event-webhooks/new", http.StatusOK)
	r := pb.post(t, "/ui/event-webhooks", url.Values{"name": {"erp_events"}, "url": {"https://erp.example/in"},
		"events": {"message.*, delivery.failed"}, "party": {"acme"}, "disable_after": {"24h"}, "enabled": {"true"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "whsec_secret1") || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create = %d %q\n%s", r.status, r.header.Get("Cache-Control"), r.body)
	}
	body := pb.get(t, "/ui/event-webhooks", http.StatusOK)
	if !strings.Contains(body, `href="/ui/event-webhooks/erp_events"`) || !strings.Contains(body, "message.*, delivery.failed") {
		t.Fatalf("list after create:\n%s", body)
	}
	if strings.Contains(body, "whsec_") {
		t.Fatal("the list shows a secret")
	}

	wantRedirect(t, pb.post(t, "/ui/event-webhooks/erp_events/test", nil), "/ui/event-webhooks/erp_events")
	body = pb.get(t, "/ui/event-webhooks/erp_events", http.StatusOK)
	if !strings.Contains(body, "Test event queued") || !strings.Contains(body, "webhook.test") || strings.Contains(body, "Enable again") {
		t.Fatalf("page after the test:\n%s", body)
	}

	disabled := time.Now()
	fake.mu.Lock()
	fake.subs["erp_events"].Health = events.WebhookHealth{DisabledAt: &disabled, FailingSince: &disabled}
	fake.mu.Unlock()
	body = pb.get(t, "/ui/event-webhooks/erp_events", http.StatusOK)
	if !strings.Contains(body, "disabled by failures") || !strings.Contains(body, "Enable again") {
		t.Fatalf("page of a disabled subscription:\n%s", body)
	}
	wantRedirect(t, pb.post(t, "/ui/event-webhooks/erp_events/enable", nil), "/ui/event-webhooks/erp_events")
	if body := pb.get(t, "/ui/event-webhooks/erp_events", http.StatusOK); !strings.Contains(body, "Enabled: the waiting events go out") {
		t.Fatalf("page after enabling:\n%s", body)
	}

	r = pb.post(t, "/ui/event-webhooks/erp_events/secret", nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, "whsec_secret2") || !strings.Contains(r.body, "previous secret goes on signing") {
		t.Fatalf("rotate = %d\n%s", r.status, r.body)
	}
	pb.get(t, "/ui/event-webhooks/nosuch", http.StatusNotFound)
	if r := pb.post(t, "/ui/event-webhooks/nosuch/test", nil); r.status != http.StatusNotFound {
		t.Fatalf("test of an unknown subscription = %d", r.status)
	}
}
