package delivery_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// heard records what the engine and the sweep report to their Metrics.
type heard struct {
	mu       sync.Mutex
	woken    int
	outcomes []string
	lost     int
	expired  []persistence.InstanceName
	passes   []delivery.SweepReport
}

func (h *heard) Woken(persistence.InstanceName) { h.mu.Lock(); h.woken++; h.mu.Unlock() }
func (h *heard) AttemptDone(_ persistence.InstanceName, outcome string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d < 0 {
		outcome += " (negative duration)"
	}
	h.outcomes = append(h.outcomes, outcome)
}
func (h *heard) ClaimLost(persistence.InstanceName) { h.mu.Lock(); h.lost++; h.mu.Unlock() }
func (h *heard) LeaseExpired(t persistence.InstanceName) {
	h.mu.Lock()
	h.expired = append(h.expired, t)
	h.mu.Unlock()
}
func (h *heard) Swept(r delivery.SweepReport) {
	h.mu.Lock()
	h.passes = append(h.passes, r)
	h.mu.Unlock()
}

func (h *heard) snapshot() (woken int, outcomes []string, lost int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.woken, slices.Clone(h.outcomes), h.lost
}

// The engine reports each wake-up its worker hears and each attempt with the outcome
// the retry policy made of it.
func TestEngineReportsAttemptsToMetrics(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		msgs := seed(t, s, "down", 1)
		sig := &localSignals{}
		m := &heard{}
		e := delivery.NewEngine(s, memPayloads{}, sig, slog.New(slog.DiscardHandler),
			delivery.Config{PollInterval: 50 * time.Millisecond, Metrics: m})
		_ = e.Start(context.Background())
		defer e.Stop(context.Background())
		one := 1
		err := e.AddTarget("down", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			return delivery.Transient(delivery.ClassTransport, errors.New("connection refused"))
		}), delivery.TargetOptions{MaxConcurrent: 1, Retry: delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(10 * time.Millisecond), MaxRetries: &one}})
		if err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"down"})
		waitFor(t, "the delivery to fail", func() bool { return deliveryOf(t, s, msgs[0].ID).State == persistence.DeliveryFailed })
		woken, outcomes, lost := m.snapshot()
		if woken != 1 || !slices.Equal(outcomes, []string{"retry", "failed"}) || lost != 0 {
			t.Fatalf("metrics heard %d wake-ups, outcomes %v, %d lost claims; want 1, [retry failed], 0", woken, outcomes, lost)
		}
	})
}

// A worker whose claim is taken while the attempt runs reports the lost claim, and the
// attempt as claim_lost.
func TestEngineReportsLostClaims(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		seed(t, s, "slow", 1)
		sig := &localSignals{}
		m := &heard{}
		lease := 150 * time.Millisecond
		e := delivery.NewEngine(s, memPayloads{}, sig, slog.New(slog.DiscardHandler),
			delivery.Config{PollInterval: time.Hour, Lease: func() time.Duration { return lease }, Metrics: m})
		_ = e.Start(context.Background())
		defer e.Stop(context.Background())
		started, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		err := e.AddTarget("slow", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			once.Do(func() { close(started) })
			<-release
			return delivery.Delivered()
		}), delivery.TargetOptions{MaxConcurrent: 1})
		if err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"slow"})
		<-started
		// The sweep of a later time finds the lease run out and takes the delivery back.
		if _, err := s.ExpireLeases(context.Background(), time.Now().Add(time.Hour), 10); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the lost claim", func() bool { _, _, lost := m.snapshot(); return lost == 1 })
		close(release)
		waitFor(t, "the attempt", func() bool { _, o, _ := m.snapshot(); return len(o) == 1 })
		if _, o, _ := m.snapshot(); o[0] != delivery.AttemptLost {
			t.Fatalf("outcome %q, want %q", o[0], delivery.AttemptLost)
		}
	})
}

// A sweep pass reports the leases it expired, by target, and the rows of each kind.
func TestSweepReportsToMetrics(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		seed(t, s, "gone", 2)
		ctx := context.Background()
		now := time.Now()
		if _, err := s.ClaimDeliveries(ctx, "gone", 1, time.Second, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		m := &heard{}
		sw := delivery.NewSweeper(s, &localSignals{}, slog.New(slog.DiscardHandler), nil)
		sw.Metrics = m
		sw.Pass(ctx, delivery.SweepSettings{Interval: time.Second, Wakeups: persistence.WakeupPolicy{MaxDispatches: 5, Backoff: func(int) time.Duration { return time.Second }}})
		m.mu.Lock()
		defer m.mu.Unlock()
		if !slices.Equal(m.expired, []persistence.InstanceName{"gone"}) || len(m.passes) != 1 {
			t.Fatalf("expired %v, passes %+v; want one lease of gone in one pass", m.expired, m.passes)
		}
		p := m.passes[0]
		if p.ExpiredLeases != 1 || p.Stalled != 0 || p.ExpiredAcks != 0 || p.At.IsZero() || p.Duration < 0 {
			t.Fatalf("pass %+v, want one lease expired", p)
		}
	})
}
