package certs_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"wharf/internal/alert/alerttest"
	"wharf/internal/certs"
)

// The monitor raises one alert per certificate and kind, not again inside a day, and
// again after it; the warning horizon follows the setting.
func TestMonitorRaisesAlertsOncePerDay(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	store := listStore{
		{ID: 1, Fingerprint: "aa", Subject: "CN=old", NotAfter: now.Add(-48 * time.Hour)},
		{ID: 2, Fingerprint: "bb", Subject: "CN=soon", NotAfter: now.Add(10 * 24 * time.Hour), SealedKey: []byte("SECRET-KEY-CANARY")},
		{ID: 3, Fingerprint: "cc", Subject: "CN=later", NotAfter: now.Add(40 * 24 * time.Hour)},
	}
	m := certs.NewMonitor(store, slog.New(slog.DiscardHandler))
	clock := now
	m.Now = func() time.Time { return clock }
	r := &alerttest.Recorder{}
	m.RaiseAlerts(r)
	check := func() {
		t.Helper()
		if _, _, err := m.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	check()
	if got := strings.Join(r.Codes(), " "); got != "certificate_expired:1 certificate_expiring:2" {
		t.Fatalf("first check raised %q", got)
	}
	clock = now.Add(23 * time.Hour)
	check()
	if n := len(r.Codes()); n != 2 {
		t.Fatalf("a check inside a day raised again: %v", r.Codes())
	}
	clock = now.Add(25 * time.Hour)
	m.Warning = func() time.Duration { return 60 * 24 * time.Hour }
	check()
	if got := strings.Join(r.Codes()[2:], " "); got != "certificate_expired:1 certificate_expiring:2 certificate_expiring:3" {
		t.Fatalf("a check a day later raised %q", got)
	}
	for _, a := range r.Alerts() {
		if a.Link != "/ui/certificates/"+a.Subject.ID {
			t.Errorf("link %q", a.Link)
		}
		for _, d := range a.Details {
			if strings.Contains(d.Value, "CANARY") {
				t.Errorf("alert carries key material: %+v", a)
			}
		}
	}
}
