package eventhook

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/bus/bustest"
	"wharf/internal/delivery"
	"wharf/internal/events"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/secret"
)

// signed is a request the endpoint received.
type signed struct {
	header http.Header
	body   []byte
}

type bundle struct {
	t      *testing.T
	store  *db.Store
	rt     *Runtime
	engine *delivery.Engine
	alerts *alerttest.Recorder
	status atomic.Int32 // what the endpoint answers
	hits   atomic.Int32
	reqs   chan signed // every request, when set
	url    string
	mu     sync.Mutex
	clock  time.Time
}

func schemas(t testing.TB) []db.ModuleSchema {
	sub, err := fs.Sub(schemaFS, "schema")
	if err != nil {
		t.Fatal(err)
	}
	return []db.ModuleSchema{{Name: ModuleName, FS: sub}}
}

func forEach(t *testing.T, fn func(t *testing.T, b *bundle)) {
	dbtest.ForEachModules(t, schemas(t), func(t *testing.T, s *db.Store) {
		fn(t, newBundle(t, s))
	})
}

func newBundle(t *testing.T, s *db.Store) *bundle {
	b := &bundle{t: t, store: s, alerts: &alerttest.Recorder{}, clock: time.Now().UTC()}
	b.status.Store(http.StatusNoContent)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		if b.reqs != nil {
			body, _ := io.ReadAll(r.Body)
			b.reqs <- signed{header: r.Header.Clone(), body: body}
		}
		w.WriteHeader(int(b.status.Load()))
	}))
	t.Cleanup(srv.Close)
	b.url = srv.URL + "/events"
	key, err := secret.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	bus := &bustest.Mem{}
	b.rt = New(module.Core{Store: s, DB: s.ModuleSQL(), Sealer: box, Alerts: b.alerts, Bus: bus, Logger: slog.New(slog.DiscardHandler)})
	b.rt.now = b.now
	b.engine = delivery.NewEngine(s, nil, bus, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 20 * time.Millisecond})
	if err := b.engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.Stop(context.Background()) })
	return b
}

func (b *bundle) now() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clock
}

func (b *bundle) advance(d time.Duration) {
	b.mu.Lock()
	b.clock = b.clock.Add(d)
	b.mu.Unlock()
}

// subscription creates a subscription with a generated secret and gives it a worker.
func (b *bundle) subscription(name string, fields map[string]any) *Subscriber {
	b.t.Helper()
	ctx := context.Background()
	fields["name"], fields["url"] = name, b.url
	fields["retry"] = map[string]any{"base": "10ms", "max_delay": "10ms", "max_retries": 1000}
	body, _ := json.Marshal(fields)
	if _, _, err := b.rt.Create(ctx, body); err != nil {
		b.t.Fatal(err)
	}
	_, cfg, err := b.rt.load(ctx, persistence.InstanceName(name))
	if err != nil {
		b.t.Fatal(err)
	}
	d, err := newTarget(module.Env{Runtimes: map[string]any{ModuleName: b.rt}}, persistence.InstanceName(name), cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.engine.AddTarget(persistence.InstanceName(name), d, cfg.Options()); err != nil {
		b.t.Fatal(err)
	}
	return d.(*Subscriber)
}

func (b *bundle) waitFor(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: not reached", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not a wait for work
	}
}

func (b *bundle) health(name string) events.WebhookHealth {
	b.t.Helper()
	h, err := b.rt.health(context.Background(), name)
	if err != nil {
		b.t.Fatal(err)
	}
	return h
}

// An endpoint failing for disable_after without a success disables the subscription with
// one alert and an audit event; its rows wait, and enabling it again sends them and
// resolves the alert. A success in between starts the failing spell afresh.
func TestFailingEndpointIsDisabledAndEnabledAgain(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		b.status.Store(http.StatusInternalServerError)
		sub := b.subscription("hooks", map[string]any{"events": []string{"*"}, "disable_after": "1h"})
		first, err := b.rt.Test(ctx, "hooks")
		if err != nil {
			t.Fatal(err)
		}
		b.waitFor("a failing spell", func() bool { return b.health("hooks").FailingSince != nil })

		// Within the hour: still enabled, still trying.
		b.advance(59 * time.Minute)
		hits := b.hits.Load()
		b.waitFor("more attempts", func() bool { return b.hits.Load() > hits+2 })
		if h := b.health("hooks"); h.DisabledAt != nil {
			t.Fatalf("disabled before its disable_after: %+v", h)
		}

		// Past the hour: disabled, one alert, nothing claimed any more.
		b.advance(2 * time.Minute)
		b.waitFor("disabled", func() bool { return b.health("hooks").DisabledAt != nil })
		got := b.alerts.Alerts()
		if len(got) != 1 || got[0].Code != alert.EventWebhookDisabled || got[0].Subject.Name != "hooks" || got[0].Resolves {
			t.Fatalf("alerts = %+v, want one event_webhook_disabled for hooks", got)
		}
		second, err := b.rt.Test(ctx, "hooks")
		if err != nil {
			t.Fatal(err)
		}
		// The worker's queue claims nothing of a disabled subscription: its rows wait.
		claims, err := sub.q.ClaimDeliveries(ctx, "hooks", 10, time.Minute, time.Now())
		if err != nil || len(claims) != 0 {
			t.Fatalf("claims of a disabled subscription = %+v, %v", claims, err)
		}
		queued, _, err := b.rt.Deliveries(ctx, "hooks", events.WebhookQueued, 10, 0)
		if err != nil || len(queued) != 1 || queued[0].ID != second {
			t.Fatalf("queued rows = %+v, %v; want the second test", queued, err)
		}

		// Enabled again with the endpoint fixed: both rows go out, the alert resolves.
		b.status.Store(http.StatusNoContent)
		changed, err := b.rt.Enable(ctx, "hooks")
		if err != nil || !changed {
			t.Fatalf("Enable = %v, %v", changed, err)
		}
		b.waitFor("both rows delivered", func() bool {
			d, _, err := b.rt.Deliveries(ctx, "hooks", events.WebhookDelivered, 10, 0)
			return err == nil && len(d) == 2 && (d[0].ID == second || d[1].ID == second) && (d[0].ID == first || d[1].ID == first)
		})
		h := b.health("hooks")
		if h.DisabledAt != nil || h.FailingSince != nil || h.LastSuccessAt == nil {
			t.Fatalf("health after enabling = %+v", h)
		}
		got = b.alerts.Alerts()
		if len(got) != 2 || !got[1].Resolves || got[1].Code != alert.EventWebhookDisabled {
			t.Fatalf("alerts = %+v, want the resolution last", got)
		}
		if changed, err := b.rt.Enable(ctx, "hooks"); err != nil || changed {
			t.Fatalf("enabling an enabled subscription = %v, %v", changed, err)
		}
		events, _, err := b.store.ListAudit(ctx, persistence.AuditFilter{Kind: "event_webhook"})
		if err != nil {
			t.Fatal(err)
		}
		actions := map[string]string{}
		for _, e := range events {
			if e.Kind == "event_webhook" {
				actions[e.Action] = e.Actor
			}
		}
		if actions["disable"] != "system" || actions["enable"] == "" {
			t.Fatalf("audit events of the subscription: %v", actions)
		}
	})
}
