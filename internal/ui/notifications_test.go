package ui

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/bus/bustest"
	"wharf/internal/module"
	"wharf/internal/notification"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// memBus is the in-process bus of package tests, as the notifier's announcements reach
// the UI through the real bus.
type memBus struct{ bustest.Mem }

// SubscribeNotifications makes the bus the UI's NotificationEvents, as the gateway's
// bus signals are.
func (b *memBus) SubscribeNotifications(fn func()) (func(), error) {
	return b.Subscribe(alert.ChangedSubject, func(string, []byte) { fn() })
}

// selfRaiser raises alerts straight into the notifier runtime, as hearing them on the bus
// does; rt is set once the runtime is made.
type selfRaiser struct {
	t  *testing.T
	rt *notification.Runtime
}

func (r *selfRaiser) Raise(a alert.Alert) {
	if err := r.rt.Accept(context.Background(), a); err != nil {
		r.t.Errorf("accept alert: %v", err)
	}
}

// notificationSchemas are the notifier module's tables.
func notificationSchemas(t *testing.T) []db.ModuleSchema {
	t.Helper()
	for _, m := range module.Modules() {
		if m.Name == notification.ModuleName {
			return []db.ModuleSchema{{Name: m.Name, FS: m.Schema}}
		}
	}
	t.Fatal("the notification module is not registered")
	return nil
}

// serveSignedIn serves the UI of b with more's Deps and signs alice in.
func serveSignedIn(t *testing.T, b *bundle, more func(*Deps)) (*pagesBundle, *Server) {
	t.Helper()
	s := newServer(t, b, more)
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	t.Cleanup(s.Close)
	pb := &pagesBundle{bundle: b, actions: &countingActions{}, c: b.client(t)}
	secret, _ := b.enroll(t, pb.c, "alice")
	if r := pb.c.signIn(t, "alice", testPassword, b.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d\n%s", r.status, r.body)
	}
	pb.csrf = match(t, csrfRE, pb.c.get(t, "/ui/").body)
	return pb, s
}

type notesBundle struct {
	*pagesBundle
	rt *notification.Runtime
}

// setupNotifications serves the UI over a store with the notifier's tables, a real
// notifier runtime on an in-process bus, an enabled instance "ops" (registered, with no
// worker: its rows stay queued) and a disabled instance "quiet".
func setupNotifications(t *testing.T) *notesBundle {
	t.Helper()
	b := newBundle(t)
	b.store = dbtest.OpenModules(t, db.DialectSQLite, notificationSchemas(t))
	bus := &memBus{}
	raiser := &selfRaiser{t: t}
	nb := &notesBundle{rt: notification.New(module.Core{Store: b.store, DB: b.store.ModuleSQL(),
		BaseURL: "https://wharf.example", Bus: bus, Alerts: raiser, Logger: slog.New(slog.DiscardHandler)})}
	raiser.rt = nb.rt
	ctx := context.Background()
	var plugin module.Plugin
	for _, m := range module.Modules() {
		for _, p := range m.Plugins {
			if p.Type == persistence.PluginNotificationWebhook {
				plugin = p
			}
		}
	}
	for _, inst := range []struct {
		name    persistence.InstanceName
		enabled bool
	}{{"ops", true}, {"quiet", false}} {
		if _, err := b.store.CreatePluginConfig(ctx, persistence.PluginConfig{Name: inst.name,
			Type: persistence.PluginNotificationWebhook, Enabled: inst.enabled}); err != nil {
			t.Fatal(err)
		}
		cfg := notification.NewConfig()
		cfg.URL = "https://hooks.example/secret-path-canary"
		cfg.RateLimit = 1000
		if _, err := plugin.NewTarget(module.Env{Runtimes: map[string]any{notification.ModuleName: nb.rt}}, inst.name, cfg); err != nil {
			t.Fatal(err)
		}
	}
	nb.pagesBundle, _ = serveSignedIn(t, b, func(d *Deps) {
		d.Notifications, d.NotificationEvents = nb.rt, bus
	})
	return nb
}

// raise accepts an alert about a certificate or a message.
func (nb *notesBundle) raise(t *testing.T, code alert.Code, id int, summary string) {
	t.Helper()
	a := alert.Alert{Code: code, Summary: summary, Subject: alert.Subject{Kind: "message", ID: fmt.Sprint(id), Name: fmt.Sprintf("order-%d.xml", id)},
		Link: fmt.Sprintf("/ui/messages/%d", id)}
	if code == alert.CertificateExpiring {
		a.Subject = alert.Subject{Kind: "certificate", ID: fmt.Sprint(id), Name: "partner-b-signing"}
		a.Link = fmt.Sprintf("/ui/certificates/%d", id)
	}
	if err := nb.rt.Accept(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

var notificationRowRE = `<tr data-notification="`

func TestNotificationsPageFilters(t *testing.T) {
	nb := setupNotifications(t)
	nb.raise(t, alert.MessageFailed, 7, "Message 7 failed at poster")
	nb.raise(t, alert.CertificateExpiring, 3, "Certificate partner-b-signing expires in 12 days")

	body := nb.get(t, "/ui/notifications", http.StatusOK)
	for _, want := range []string{"Message 7 failed at poster", `href="/ui/messages/7"`, "Message failed",
		"Certificate expiring", `href="/ui/certificates/3"`, "partner-b-signing", "order-7.xml",
		`<span class="badge badge-alert-critical">critical</span>`, `<span class="badge badge-note-queued">queued</span>`,
		`action="/ui/notifications/ops/test"`, `sse-connect="/ui/live/notifications"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "secret-path-canary") {
		t.Error("the page shows the notifier's URL")
	}
	if strings.Contains(body, `action="/ui/notifications/quiet/test"`) {
		t.Error("a disabled instance has a test button")
	}
	if n := strings.Count(body, notificationRowRE); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}

	for _, c := range []struct {
		query string
		want  []string
		not   []string
	}{
		{"severity=critical", []string{"Message 7 failed"}, []string{"partner-b-signing expires"}},
		{"severity=warning", []string{"Message 7 failed", "partner-b-signing expires"}, nil},
		{"code=certificate_expiring", []string{"partner-b-signing expires"}, []string{"Message 7 failed"}},
		{"state=queued&instance=ops", []string{"Message 7 failed", "partner-b-signing expires"}, nil},
		{"state=delivered", []string{"No notifications match."}, []string{"Message 7 failed", "partner-b-signing expires"}},
		{"instance=quiet", []string{"No notifications match."}, []string{"Message 7 failed"}},
	} {
		body := nb.get(t, "/ui/notifications?"+c.query, http.StatusOK)
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: page lacks %q", c.query, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(body, w) {
				t.Errorf("%s: page shows %q", c.query, w)
			}
		}
	}
}

func TestNotificationsPageRefusesBadFilters(t *testing.T) {
	nb := setupNotifications(t)
	nb.raise(t, alert.MessageFailed, 7, "Message 7 failed at poster")
	for _, c := range []struct{ query, field string }{
		{"state=lost", "state"},
		{"code=everything", "code"},
		{"severity=loud", "severity"},
		{"instance=Not%20A%20Name", "instance"},
	} {
		body := nb.get(t, "/ui/notifications?"+c.query, http.StatusBadRequest)
		if !strings.Contains(body, `id="filter-`+c.field+`-error"`) {
			t.Errorf("%s: no error by the %s field", c.query, c.field)
		}
		if strings.Contains(body, "Message 7 failed") {
			t.Errorf("%s: rows shown with a refused filter", c.query)
		}
	}
	// Every refused field is named at once.
	body := nb.get(t, "/ui/notifications?state=lost&severity=loud", http.StatusBadRequest)
	if !strings.Contains(body, `id="filter-state-error"`) || !strings.Contains(body, `id="filter-severity-error"`) {
		t.Error("not every refused field is named")
	}
	if r := nb.c.get(t, "/ui/live/notifications?state=lost"); r.status != http.StatusBadRequest {
		t.Errorf("live stream with a bad filter = %d, want 400", r.status)
	}
}

func TestNotificationsPagePages(t *testing.T) {
	nb := setupNotifications(t)
	for i := 1; i <= notificationsPageSize+5; i++ {
		nb.raise(t, alert.MessageFailed, i, fmt.Sprintf("Message %d failed", i))
	}
	body := nb.get(t, "/ui/notifications?severity=critical", http.StatusOK)
	if n := strings.Count(body, notificationRowRE); n != notificationsPageSize {
		t.Errorf("first page has %d rows, want %d", n, notificationsPageSize)
	}
	next := fmt.Sprintf(`href="/ui/notifications?offset=%d&amp;severity=critical" rel="next"`, notificationsPageSize)
	if !strings.Contains(body, next) || !strings.Contains(body, "Message 55 failed<") {
		t.Errorf("first page: no next link %s or not newest first", next)
	}
	body = nb.get(t, fmt.Sprintf("/ui/notifications?severity=critical&offset=%d", notificationsPageSize), http.StatusOK)
	if n := strings.Count(body, notificationRowRE); n != 5 {
		t.Errorf("second page has %d rows, want 5", n)
	}
	if !strings.Contains(body, "Message 1 failed<") || !strings.Contains(body, `rel="prev"`) || strings.Contains(body, `rel="next"`) {
		t.Error("second page: wrong rows or links")
	}
	nb.get(t, "/ui/notifications?offset=-1", http.StatusBadRequest)
}

func TestNotificationTestButton(t *testing.T) {
	nb := setupNotifications(t)
	r := nb.post(t, "/ui/notifications/ops/test", nil)
	wantRedirect(t, r, "/ui/notifications?instance=ops")
	body := nb.get(t, "/ui/notifications?instance=ops", http.StatusOK)
	for _, want := range []string{"Test notification raised", "Test notification of ops", "notification_test",
		`href="/ui/notifications?instance=ops"`} {
		if !strings.Contains(body, want) {
			t.Errorf("after the test, the page lacks %q", want)
		}
	}
	rows, _, err := nb.rt.ListNotifications(context.Background(), alert.Filter{Instance: "ops", Code: alert.NotificationTest})
	if err != nil || len(rows) != 1 {
		t.Fatalf("test rows = %v, %v; want one", rows, err)
	}

	for _, c := range []struct{ path, flash string }{
		{"/ui/notifications/quiet/test", "Test refused: the instance is not an enabled"},
		{"/ui/notifications/nope/test", "Test refused: there is no such instance."},
	} {
		r := nb.post(t, c.path, nil)
		if r.status != http.StatusSeeOther {
			t.Fatalf("POST %s = %d", c.path, r.status)
		}
		if body := nb.get(t, r.header.Get("Location"), http.StatusOK); !strings.Contains(body, c.flash) {
			t.Errorf("POST %s: no flash %q", c.path, c.flash)
		}
	}
	if r := nb.c.post(t, "/ui/notifications/ops/test", nil); r.status != http.StatusForbidden {
		t.Errorf("test without the CSRF token = %d, want 403", r.status)
	}
	if rows, _, _ := nb.rt.ListNotifications(context.Background(), alert.Filter{Code: alert.NotificationTest}); len(rows) != 1 {
		t.Errorf("%d test rows after the refused tests, want 1", len(rows))
	}
}

func TestNotificationsLive(t *testing.T) {
	nb := setupNotifications(t)
	nb.raise(t, alert.MessageFailed, 1, "Message 1 failed")
	ch := nb.c.stream(t, "/ui/live/notifications?severity=critical")
	waitEvent(t, ch, "results", "Message 1 failed")
	nb.raise(t, alert.MessageFailed, 2, "Message 2 failed")
	ev := waitEvent(t, ch, "results", "Message 2 failed")
	if !strings.Contains(ev.Data, "Message 1 failed") {
		t.Error("the update lost the older row")
	}

	dash := nb.c.stream(t, "/ui/live/dashboard")
	waitEvent(t, dash, "dashboard", "Message 2 failed")
	nb.raise(t, alert.MessageFailed, 3, "Message 3 failed")
	waitEvent(t, dash, "dashboard", "Message 3 failed")
}

func TestDashboardCriticalAlerts(t *testing.T) {
	nb := setupNotifications(t)
	body := nb.get(t, "/ui/", http.StatusOK)
	if !strings.Contains(body, "Open critical alerts") || !strings.Contains(body, "No open critical alert.") {
		t.Error("dashboard lacks the empty alerts card")
	}
	for i := 1; i <= dashboardAlerts+2; i++ {
		nb.raise(t, alert.MessageFailed, i, fmt.Sprintf("Message %d failed", i))
	}
	nb.raise(t, alert.CertificateExpiring, 3, "Certificate partner-b-signing expires in 12 days")
	body = nb.get(t, "/ui/", http.StatusOK)
	for i := 3; i <= dashboardAlerts+2; i++ {
		if !strings.Contains(body, fmt.Sprintf(`<a class="wrap" href="/ui/messages/%d">Message %d failed</a>`, i, i)) {
			t.Errorf("dashboard lacks critical alert %d", i)
		}
	}
	for _, not := range []string{"Message 2 failed", "partner-b-signing expires"} {
		if strings.Contains(body, not) {
			t.Errorf("dashboard shows %q", not)
		}
	}
	if !strings.Contains(body, `href="/ui/notifications?severity=critical"`) {
		t.Error("the card does not link to the Notifications page")
	}
	// A resolved alert leaves the card, and the next older open one takes its place.
	if err := nb.rt.Accept(context.Background(), alert.Resolution(alert.MessageFailed, alert.Subject{Kind: "message", ID: "7"})); err != nil {
		t.Fatal(err)
	}
	body = nb.get(t, "/ui/", http.StatusOK)
	if strings.Contains(body, "Message 7 failed") || !strings.Contains(body, "Message 2 failed") {
		t.Error("the card still shows the resolved alert, or not the next open one")
	}
}

// A retrying message is a problem on the dashboard, linked to the list of them.
func TestDashboardCountsRetryingAsAProblem(t *testing.T) {
	pb := setupPages(t)
	const link = `<li><a href="/ui/messages?status=retrying"><span class="badge badge-retrying">Retrying</span> 1 message</a></li>`
	if body := pb.get(t, "/ui/", http.StatusOK); strings.Contains(body, link) {
		t.Fatal("the problems card lists a retrying message before there is one")
	}
	ctx := context.Background()
	now := time.Now().UTC()
	id, err := pb.store.AllocateMessageIDs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	nm := persistence.NewMessage{Message: persistence.Message{ID: id, From: acmeParty, To: localParty, Source: pollerInst,
		OriginalFileName: "order.edi", SHA256: strings.Repeat("0", 64), CreatedAt: now, CorrelationID: "c", OriginEventID: fmt.Sprint(id)},
		Dispatch: true, Targets: []persistence.InstanceName{writerInst}}
	if _, err := pb.store.InsertMessages(ctx, []persistence.NewMessage{nm}); err != nil {
		t.Fatal(err)
	}
	cs, err := pb.store.ClaimDeliveries(ctx, writerInst, 1, time.Minute, now)
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %v, %d claims", err, len(cs))
	}
	if _, err := pb.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: cs[0].Delivery.ID, Token: cs[0].Delivery.ClaimToken,
		Kind: persistence.OutcomeRetry, NextAttemptAt: now.Add(time.Hour), Reason: "HTTP 503", At: now}}); err != nil {
		t.Fatal(err)
	}
	if body := pb.get(t, "/ui/", http.StatusOK); !strings.Contains(body, link) {
		t.Errorf("the problems card does not list the retrying message:\n%s", body)
	}
}
