package delivery_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// testClock is the engine's clock in tests that move time by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// panickingTarget panics on every attempt; as a Recoverer it asks for its next try an
// hour later, the way the AS2 sender applies a partner's retry policy.
type panickingTarget struct {
	calls     atomic.Int32
	recoverer bool
	clock     *testClock
	causes    chan error
}

func (p *panickingTarget) Deliver(context.Context, delivery.Attempt) delivery.Result {
	p.calls.Add(1)
	var m map[string]int
	m["boom"]++ // a nil-map write: a runtime panic, as a parser bug would raise
	return delivery.Delivered()
}

type recoveringTarget struct{ *panickingTarget }

func (r recoveringTarget) Recovered(_ context.Context, _ delivery.Attempt, cause error) delivery.Result {
	r.causes <- cause
	return delivery.RetryAt(r.clock.Now().Add(time.Hour), delivery.ClassTransport, cause)
}

// TestEnginePanickingTargetFollowsItsPolicy: a target that panics is a failed attempt,
// counted, with a reason naming the panic, and tried again on the target's own schedule:
// its instance policy, or what a Recoverer target decides over a 1 s backstop policy.
func TestEnginePanickingTargetFollowsItsPolicy(t *testing.T) {
	second := delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(time.Second), MaxDelay: delivery.Duration(time.Second)}
	// No jitter: the test holds the exact time of the next attempt.
	noJitter := 0.0
	hour := delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(time.Hour), Jitter: &noJitter}
	tests := []struct {
		name      string
		recoverer bool
		policy    delivery.RetryPolicy
	}{
		{name: "instance policy", policy: hour},
		{name: "recoverer over a backstop", recoverer: true, policy: second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
				msgs := seed(t, s, "fragile", 1)
				clock := &testClock{now: time.Now().UTC().Truncate(time.Millisecond)}
				start := clock.Now()
				sig := &localSignals{}
				e := delivery.NewEngine(s, memPayloads{}, sig, slog.New(slog.DiscardHandler),
					delivery.Config{PollInterval: 20 * time.Millisecond, Now: clock.Now})
				_ = e.Start(context.Background())
				defer e.Stop(context.Background())
				target := &panickingTarget{clock: clock, causes: make(chan error, 4)}
				var d delivery.Deliverer = target
				if tt.recoverer {
					d = recoveringTarget{target}
				}
				if err := e.AddTarget("fragile", d, delivery.TargetOptions{MaxConcurrent: 1, Retry: tt.policy}); err != nil {
					t.Fatal(err)
				}
				sig.Wake([]persistence.InstanceName{"fragile"})
				waitFor(t, "the first attempt's outcome", func() bool {
					return deliveryOf(t, s, msgs[0].ID).State == persistence.DeliveryRetrying
				})
				got := deliveryOf(t, s, msgs[0].ID)
				if got.Attempts != 1 || target.calls.Load() != 1 {
					t.Errorf("attempts %d, calls %d; want 1", got.Attempts, target.calls.Load())
				}
				if !strings.Contains(got.LastError, "fragile panicked") || !strings.Contains(got.LastError, "nil map") {
					t.Errorf("reason %q does not name the panic", got.LastError)
				}
				if got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(start.Add(time.Hour)) {
					t.Fatalf("next attempt at %v, want an hour after %v", got.NextAttemptAt, start)
				}
				if tt.recoverer {
					if cause := <-target.causes; !strings.Contains(cause.Error(), "nil map") {
						t.Errorf("Recovered got cause %v", cause)
					}
				}
				clock.Advance(time.Hour + time.Second)
				sig.Wake([]persistence.InstanceName{"fragile"})
				waitFor(t, "the second attempt's outcome", func() bool {
					return deliveryOf(t, s, msgs[0].ID).Attempts == 2 && target.calls.Load() == 2 &&
						deliveryOf(t, s, msgs[0].ID).State == persistence.DeliveryRetrying
				})
			})
		})
	}
}
