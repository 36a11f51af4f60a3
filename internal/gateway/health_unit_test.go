package gateway

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/probe"
)

// switchPing fails while down is set.
type switchPing struct{ down atomic.Bool }

func (p *switchPing) ping(context.Context) error {
	if p.down.Load() {
		return errors.New(`dial tcp 10.0.0.5:5432: connect: connection refused; see postgres://wharf:pw@db.example/wharf`)
	}
	return nil
}

// The monitor raises database_unavailable once when the database stops answering, its
// resolution once when it answers again, names what is down, and never puts the
// database's URL in the alert.
func TestHealthRaisesAndResolves(t *testing.T) {
	var dbPing, busPing switchPing
	r := &alerttest.Recorder{}
	h := newHealth(dbPing.ping, busPing.ping, r, func() time.Duration { return time.Hour }, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	check := func() probe.Readiness {
		h.checked = time.Time{} // each step is a fresh check, not a reused result
		return h.Check(ctx)
	}
	for _, step := range []struct {
		db, bus bool // down
		ready   bool
		down    []string
	}{
		{false, false, true, nil},
		{true, false, false, []string{"database"}},
		{true, false, false, []string{"database"}},
		{true, true, false, []string{"database", "bus"}},
		{false, true, false, []string{"bus"}},
		{false, false, true, nil},
	} {
		dbPing.down.Store(step.db)
		busPing.down.Store(step.bus)
		if got := check().Ready(); got != step.ready {
			t.Errorf("db down %v, bus down %v: ready %v", step.db, step.bus, got)
		}
		if got := h.Down(); !slices.Equal(got, step.down) {
			t.Errorf("db down %v, bus down %v: down %v, want %v", step.db, step.bus, got, step.down)
		}
	}
	as := r.Alerts()
	if len(as) != 2 || as[0].Code != alert.DatabaseUnavailable || as[0].Resolves || !as[1].Resolves {
		t.Fatalf("raised %+v, want database_unavailable and its resolution", as)
	}
	for _, d := range as[0].Details {
		if strings.Contains(d.Value, "pw@") || strings.Contains(d.Value, "postgres://") {
			t.Errorf("alert detail %s carries the URL: %q", d.Label, d.Value)
		}
	}
}

// Checks that arrive together share one ping.
func TestHealthReusesAFreshResult(t *testing.T) {
	var pings atomic.Int32
	counted := func(context.Context) error { pings.Add(1); return nil }
	h := newHealth(counted, func(context.Context) error { return nil }, alert.Discard, func() time.Duration { return time.Hour },
		slog.New(slog.DiscardHandler))
	for range 5 {
		h.Check(context.Background())
	}
	if n := pings.Load(); n != 1 {
		t.Fatalf("%d database pings for 5 checks in a row, want 1", n)
	}
}
