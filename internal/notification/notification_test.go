package notification

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/bus/bustest"
	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// receiver is the loopback webhook: answer decides each response.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	answer func(n int, w http.ResponseWriter)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	n := len(r.bodies)
	answer := r.answer
	r.mu.Unlock()
	if answer == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	answer(n, w)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func (r *receiver) codes() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, b := range r.bodies {
		var v struct{ Code string }
		_ = json.Unmarshal(b, &v)
		out[v.Code]++
	}
	return out
}

type bundle struct {
	t      *testing.T
	store  *db.Store
	bus    *bustest.Mem
	rt     *Runtime
	engine *delivery.Engine
	recv   *receiver
	url    string
	clock  time.Time
	mu     sync.Mutex
}

func schemas(t testing.TB) []db.ModuleSchema {
	sub, err := fs.Sub(schemaFS, "schema")
	if err != nil {
		t.Fatal(err)
	}
	return []db.ModuleSchema{{Name: ModuleName, FS: sub}}
}

// forEach runs fn against every available database.
func forEach(t *testing.T, fn func(t *testing.T, b *bundle)) {
	dbtest.ForEachModules(t, schemas(t), func(t *testing.T, s *db.Store) {
		fn(t, newBundle(t, s))
	})
}

func newBundle(t *testing.T, s *db.Store) *bundle {
	b := &bundle{t: t, store: s, bus: &bustest.Mem{}, recv: &receiver{}, clock: time.Now().UTC()}
	srv := httptest.NewServer(b.recv)
	t.Cleanup(srv.Close)
	b.url = srv.URL + "/hook"
	b.rt = b.runtime()
	b.engine = delivery.NewEngine(s, nil, b.bus, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 20 * time.Millisecond})
	if err := b.engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.Stop(context.Background()) })
	return b
}

func (b *bundle) runtime() *Runtime {
	rt := New(module.Core{Store: b.store, DB: b.store.ModuleSQL(), BaseURL: "https://wharf.example", Bus: b.bus,
		Logger: slog.New(slog.DiscardHandler)})
	rt.now = b.now
	return rt
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

// notifier creates an enabled instance record and its notifier in rt; start also gives
// it a worker in the engine.
func (b *bundle) notifier(rt *Runtime, name string, start bool, edit func(*Config)) *Notifier {
	b.t.Helper()
	ctx := context.Background()
	if _, err := b.store.GetPluginConfig(ctx, persistence.InstanceName(name)); err != nil {
		if _, err := b.store.CreatePluginConfig(ctx, persistence.PluginConfig{Name: persistence.InstanceName(name),
			Type: persistence.PluginNotificationWebhook, Enabled: true}); err != nil {
			b.t.Fatal(err)
		}
	}
	cfg := NewConfig()
	cfg.URL = b.url
	cfg.SigningSecret = "0123456789abcdef-secret"
	zero := 0
	cfg.Retry = delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(10 * time.Millisecond), MaxDelay: delivery.Duration(10 * time.Millisecond), MaxRetries: &zero}
	cfg.Timeout = delivery.Duration(2 * time.Second)
	if edit != nil {
		edit(cfg)
	}
	d, err := newTarget(module.Env{Runtimes: map[string]any{ModuleName: rt}}, persistence.InstanceName(name), cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	if start {
		if err := b.engine.AddTarget(persistence.InstanceName(name), d, cfg.Options()); err != nil {
			b.t.Fatal(err)
		}
	}
	return d.(*Notifier)
}

func failed(id int) alert.Alert {
	a, _ := alert.ForMessage(persistence.Message{ID: int64(id), From: "acme", To: "local", Status: persistence.StatusError}, "poster", "HTTP 403 Forbidden")
	return a
}

func (b *bundle) accept(a alert.Alert) {
	b.t.Helper()
	if err := b.rt.Accept(context.Background(), a); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bundle) list(f Filter) []Notification {
	b.t.Helper()
	f.Limit = maxLimit
	out, _, err := b.rt.ListNotifications(context.Background(), f)
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

// waitState polls until count rows of the filter are in the state.
func (b *bundle) waitState(f Filter, state State, count int) []Notification {
	b.t.Helper()
	f.State = state
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := b.list(f)
		if len(got) == count {
			return got
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%d rows %s, want %d: %+v", len(got), state, count, b.list(Filter{}))
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not a wait for work
	}
}

// A storm of 500 failures in less than a minute sends the rate limit's worth and, once
// the window has passed, one summary of the rest.
func TestStormSendsRateLimitAndOneSummary(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		b.notifier(b.rt, "ops", true, func(c *Config) { c.RateLimit = 10; c.RateWindow = delivery.Duration(time.Minute) })
		for i := 1; i <= 500; i++ {
			b.accept(failed(i))
			b.advance(100 * time.Millisecond)
		}
		b.waitState(Filter{Instance: "ops"}, StateDelivered, 10)
		if held := b.list(Filter{State: StateHeld}); len(held) != 490 {
			t.Fatalf("%d rows held, want 490", len(held))
		}
		if err := b.rt.Summarize(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(b.list(Filter{Code: alert.AlertsHeld})); n != 0 {
			t.Fatal("a summary was sent before the window passed")
		}
		b.advance(15 * time.Second) // the first held row is now more than a minute old
		for range 2 {
			if err := b.rt.Summarize(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		sum := b.waitState(Filter{Code: alert.AlertsHeld}, StateDelivered, 1)
		if !strings.Contains(sum[0].Summary, "490 alerts were held back") {
			t.Fatalf("summary %q", sum[0].Summary)
		}
		if got := b.recv.codes(); got["message_failed"] != 10 || got["alerts_held"] != 1 || b.recv.count() != 11 {
			t.Fatalf("receiver got %v, want 10 message_failed and 1 alerts_held", got)
		}
		for _, r := range b.list(Filter{State: StateHeld}) {
			if r.SummaryID == nil || *r.SummaryID != sum[0].ID {
				t.Fatalf("held row %d not covered by the summary: %+v", r.ID, r.SummaryID)
			}
		}
	})
}

// Filters drop what the instance does not want; the cooldown suppresses a repeat of a
// dedupe key; tests pass everything.
func TestFiltersAndCooldown(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		b.notifier(b.rt, "crit", true, func(c *Config) { c.MinSeverity = alert.SeverityCritical })
		b.notifier(b.rt, "certs", true, func(c *Config) {
			c.Codes = []alert.Code{alert.CertificateExpiring}
			c.Cooldown = delivery.Duration(time.Hour)
		})
		cert := alert.ForCertificate(persistence.Certificate{ID: 3, Subject: "CN=x", NotAfter: b.now().Add(48 * time.Hour)}, false, b.now())
		b.accept(cert)
		f1 := failed(1)
		f1.ID = alert.NewID()
		b.accept(f1)
		b.advance(time.Minute)
		cert.ID = ""
		b.accept(cert) // the same dedupe key within the hour
		b.accept(alert.Alert{Code: alert.NotificationTest, Subject: alert.Subject{Kind: "plugin"}, Instance: "crit"})

		crit := b.waitState(Filter{Instance: "crit"}, StateDelivered, 2)
		if crit[0].Code != alert.NotificationTest || crit[1].Code != alert.MessageFailed {
			t.Fatalf("crit got %+v", crit)
		}
		b.waitState(Filter{Instance: "certs"}, StateDelivered, 1)
		sup := b.list(Filter{Instance: "certs", State: StateSuppressed})
		if len(sup) != 1 || !strings.Contains(sup[0].LastError, "cooldown") {
			t.Fatalf("suppressed: %+v", sup)
		}
		if n := len(b.list(Filter{Instance: "certs"})); n != 2 {
			t.Fatalf("certs has %d rows, want 2 (the message_failed alert is filtered out)", n)
		}
		// An alert heard twice (two processes on one bus) is recorded once.
		b.accept(f1)
		all, total, err := b.rt.ListAlerts(context.Background(), Filter{})
		if err != nil || total != 4 || len(all) != 4 {
			t.Fatalf("alerts: %d (%d), %v", total, len(all), err)
		}
		if n := len(b.list(Filter{Instance: "crit"})); n != 2 {
			t.Fatalf("hearing an alert again changed crit's rows: %d", n)
		}
		crits, _, _ := b.rt.ListAlerts(context.Background(), Filter{Severity: alert.SeverityCritical})
		if len(crits) != 1 || crits[0].Code != alert.MessageFailed {
			t.Fatalf("critical alerts: %+v", crits)
		}
	})
}

// The receiver's answer decides: 2xx delivered; 408/425/429/5xx and timeouts retried;
// other 4xx and redirects failed at once.
func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(n int, w http.ResponseWriter)
		retries  int
		state    State
		attempts int
		reason   string
	}{
		{"2xx", func(int, http.ResponseWriter) {}, 0, StateDelivered, 1, ""},
		{"503 then 200", func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}, 3, StateDelivered, 2, ""},
		{"429 with Retry-After then 204", func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}, 3, StateDelivered, 2, ""},
		{"5xx until the retries are used", func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) }, 2, StateFailed, 3, "HTTP 502"},
		{"400", func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) }, 3, StateFailed, 1, "HTTP 400"},
		{"redirect", func(_ int, w http.ResponseWriter) {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		}, 3, StateFailed, 1, "redirect refused"},
		{"timeout", func(n int, w http.ResponseWriter) { time.Sleep(300 * time.Millisecond) }, 0, StateFailed, 1, "no response within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBundle(t, dbtest.OpenModules(t, db.DialectSQLite, schemas(t)))
			b.recv.answer = tc.answer
			b.notifier(b.rt, "ops", true, func(c *Config) {
				c.Retry.MaxRetries = &tc.retries
				c.Timeout = delivery.Duration(100 * time.Millisecond)
			})
			b.accept(failed(7))
			got := b.waitState(Filter{}, tc.state, 1)[0]
			if got.Attempts != tc.attempts || !strings.Contains(got.LastError, tc.reason) {
				t.Fatalf("row %+v, want %d attempts and a reason with %q", got, tc.attempts, tc.reason)
			}
			if strings.Contains(got.LastError, "127.0.0.1") || strings.Contains(got.LastError, "/hook") {
				t.Fatalf("reason names the endpoint: %q", got.LastError)
			}
		})
	}
}

// Queued rows wait in the database for a worker: a process that starts later (or
// restarts) sends them; a row older than a day fails without a request.
func TestQueuedRowsSurviveAndExpire(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		b.notifier(b.rt, "ops", false, nil) // known to the rules, but no worker yet
		b.accept(failed(1))
		old := failed(2)
		old.Time = time.Now().Add(-25 * time.Hour)
		b.accept(old)
		if q := b.list(Filter{State: StateQueued}); len(q) != 2 {
			t.Fatalf("queued rows: %+v", q)
		}

		rt2 := b.runtime() // the next process
		b.notifier(rt2, "ops", true, nil)
		b.waitState(Filter{}, StateDelivered, 1)
		f := b.waitState(Filter{}, StateFailed, 1)[0]
		if !strings.Contains(f.LastError, "older than") {
			t.Fatalf("old row: %+v", f)
		}
		if n := b.recv.count(); n != 1 {
			t.Fatalf("receiver got %d requests, want 1 (none for the old alert)", n)
		}
	})
}

// The log keeps 30 days; what is older goes, and alerts no row names with it.
func TestRetention(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		b.notifier(b.rt, "ops", true, nil)
		b.accept(failed(1))
		b.waitState(Filter{}, StateDelivered, 1)
		b.advance(RetentionAge + time.Hour)
		b.accept(failed(2)) // recent
		if n, err := b.rt.Retain(context.Background()); err != nil || n != 2 {
			t.Fatalf("retain removed %d rows and alerts (%v), want 2", n, err)
		}
		rows := b.list(Filter{})
		if len(rows) != 1 || rows[0].Summary != failed(2).Summary {
			t.Fatalf("kept %+v", rows)
		}
		_, total, _ := b.rt.ListAlerts(context.Background(), Filter{})
		if total != 1 {
			t.Fatalf("%d alerts kept, want 1", total)
		}
	})
}

// Beyond RetentionRows, the oldest finished rows go, however recent; unfinished ones stay.
func TestRetentionRowCap(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		b.notifier(b.rt, "ops", true, nil)
		b.accept(failed(1))
		first := b.waitState(Filter{}, StateDelivered, 1)[0]
		// Fill the log past the cap with rows of the same alert for other instances; one
		// early row is still queued and must survive.
		err := b.rt.db.Write(ctx, func(tx module.Tx) error {
			now := tx.Time(tx.Now())
			for i := range RetentionRows + 10 {
				state := "delivered"
				if i == 3 {
					state = "queued"
				}
				if _, err := tx.Exec(ctx, `INSERT INTO notifications (alert_id, instance, kind, state, severity, code,
					dedupe_key, created_at, updated_at, attempts, claim_token, last_error)
					SELECT alert_id, ?, kind, ?, severity, code, dedupe_key, ?, ?, 0, '', '' FROM notifications WHERE id = ?`,
					fmt.Sprint("filler_", i), state, now, now, first.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		n, err := b.rt.Retain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, total, err := b.rt.ListNotifications(ctx, Filter{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		// 10,011 rows: the 11 oldest are past the cap, one of them still queued.
		if n != 10 || total != RetentionRows+1 {
			t.Fatalf("retain removed %d, %d rows left; want 10 removed and %d left", n, total, RetentionRows+1)
		}
		if rows := b.list(Filter{State: StateQueued}); len(rows) != 1 || rows[0].Instance != "filler_3" {
			t.Errorf("queued rows after retention: %+v", rows)
		}
	})
}

// A stopped or disabled instance gets no rows.
func TestDisabledInstanceGetsNothing(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		b.notifier(b.rt, "ops", true, nil)
		ctx := context.Background()
		rec, err := b.store.GetPluginConfig(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		rec.Enabled = false
		if _, err := b.store.UpdatePluginConfig(ctx, rec); err != nil {
			t.Fatal(err)
		}
		b.accept(failed(1))
		if rows := b.list(Filter{}); len(rows) != 0 {
			t.Fatalf("rows for a disabled instance: %+v", rows)
		}
		if _, err := b.rt.Test(ctx, "ops", "tester"); err == nil {
			t.Fatal("a disabled instance accepted a test")
		}
	})
}

// Each process on the bus hears every alert: one without notifiers records it first, and
// the process that runs the instance still queues it.
func TestAlertHeardFirstByAnotherProcess(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		other := b.runtime() // runs no notifier
		b.notifier(b.rt, "ops", true, nil)
		a := failed(1)
		a.ID = alert.NewID()
		if err := other.Accept(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if rows := b.list(Filter{}); len(rows) != 0 {
			t.Fatalf("a process without the instance queued %+v", rows)
		}
		b.accept(a)
		b.waitState(Filter{Instance: "ops"}, StateDelivered, 1)
	})
}
