package certs_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/persistence"
)

// listStore serves a fixed list of certificates, soonest expiry first, in pages.
type listStore []persistence.Certificate

func (l listStore) ListCertificates(ctx context.Context, opt persistence.ListOptions) ([]persistence.Certificate, int, error) {
	start := min(opt.Offset, len(l))
	end := min(start+opt.Limit, len(l))
	return l[start:end], len(l), nil
}

func TestMonitorCheck(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	store := listStore{
		{ID: 1, Fingerprint: "aa", Subject: "CN=old", NotAfter: now.Add(-48 * time.Hour)},
		{ID: 2, Fingerprint: "bb", Subject: "CN=soon", NotAfter: now.Add(10 * 24 * time.Hour)},
		{ID: 3, Fingerprint: "cc", Subject: "CN=edge", NotAfter: now.Add(certs.ExpiryWarning)},
		{ID: 4, Fingerprint: "dd", Subject: "CN=fine", NotAfter: now.Add(31 * 24 * time.Hour)},
	}
	var logs bytes.Buffer
	m := certs.NewMonitor(store, slog.New(slog.NewTextHandler(&logs, nil)))
	m.Now = func() time.Time { return now }
	type call struct {
		id      int64
		expired bool
	}
	var calls []call
	m.OnExpiry = func(ctx context.Context, c persistence.Certificate, expired bool) {
		calls = append(calls, call{c.ID, expired})
	}
	expiring, expired, err := m.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(expired) != 1 || expired[0].ID != 1 {
		t.Errorf("expired = %+v, want certificate 1", expired)
	}
	if len(expiring) != 2 || expiring[0].ID != 2 || expiring[1].ID != 3 {
		t.Errorf("expiring = %+v, want certificates 2 and 3", expiring)
	}
	want := []call{{1, true}, {2, false}, {3, false}}
	if len(calls) != len(want) {
		t.Fatalf("OnExpiry calls = %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("OnExpiry call %d = %v, want %v", i, calls[i], want[i])
		}
	}
	out := logs.String()
	for _, line := range []string{
		`level=ERROR msg="certificate has expired" certificate_id=1`,
		`level=WARN msg="certificate expires soon" certificate_id=2`,
		`days_left=10`,
	} {
		if !strings.Contains(out, line) {
			t.Errorf("log lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "CN=fine") {
		t.Errorf("log mentions a certificate far from expiry:\n%s", out)
	}
}

func TestMonitorStartChecksAtOnceAndStops(t *testing.T) {
	checked := make(chan int64, 1)
	now := time.Now()
	m := certs.NewMonitor(listStore{{ID: 7, NotAfter: now.Add(-time.Hour)}}, slog.New(slog.DiscardHandler))
	m.OnExpiry = func(ctx context.Context, c persistence.Certificate, expired bool) { checked <- c.ID }
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-checked:
		if id != 7 {
			t.Errorf("checked certificate %d, want 7", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no check after Start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Stop did not return")
	}
}

func TestDaysLeft(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		after time.Duration
		want  int
	}{
		{36 * time.Hour, 1}, {24 * time.Hour, 1}, {time.Hour, 0}, {-time.Hour, -1}, {-24 * time.Hour, -1}, {-25 * time.Hour, -2},
	} {
		if got := certs.DaysLeft(now.Add(tc.after), now); got != tc.want {
			t.Errorf("DaysLeft(now%+v) = %d, want %d", tc.after, got, tc.want)
		}
	}
}
