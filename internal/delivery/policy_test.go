package delivery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/retry"
)

// TestEngineAppliesRoutePolicy: a delivery dispatched by a route with a retry override is
// decided by the route's rule for the failure's class, another by the target's policy;
// each retry's history names the rule, the failure names the rule that gave up, and the
// delivery keeps the failure's class.
func TestEngineAppliesRoutePolicy(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		one, three := 1, 3
		route := &delivery.RetryPolicy{Rules: retry.Rules{HTTP5xx: &delivery.RetryRule{MaxRetries: &one}}}
		byRoute := seedWithPolicy(t, s, "flaky", 1, route)[0]
		byTarget := seed(t, s, "flaky", 1)[0]
		sig := &localSignals{}
		e := newEngine(s, sig)
		_ = e.Start(context.Background())
		defer e.Stop(context.Background())
		zero := 0.0
		err := e.AddTarget("flaky", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			return delivery.Transient(delivery.ClassHTTP5xx, delivery.HTTPStatusError(503))
		}), delivery.TargetOptions{MaxConcurrent: 2, Retry: delivery.RetryPolicy{Strategy: delivery.RetryFixed,
			Base: delivery.Duration(10 * time.Millisecond), MaxRetries: &three, Jitter: &zero}})
		if err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"flaky"})
		for _, tc := range []struct {
			msg      persistence.Message
			attempts int
			retry    string
			gaveUp   string
		}{
			{byRoute, 2, "HTTP 503 Service Unavailable — retry 1 of 1 in 10ms (route policy, rule http_5xx, fixed)",
				"HTTP 503 Service Unavailable — retries exhausted after 2 attempts (route policy, rule http_5xx, fixed)"},
			{byTarget, 4, "HTTP 503 Service Unavailable — retry 3 of 3 in 10ms (target policy, default, fixed)",
				"HTTP 503 Service Unavailable — retries exhausted after 4 attempts (target policy, default, fixed)"},
		} {
			waitFor(t, "the delivery to fail", func() bool { return deliveryOf(t, s, tc.msg.ID).State == persistence.DeliveryFailed })
			d := deliveryOf(t, s, tc.msg.ID)
			if d.Attempts != tc.attempts || d.LastError != tc.gaveUp || d.ErrorClass != "http_5xx" {
				t.Errorf("delivery %d: %d attempts, class %q, last error %q; want %d, http_5xx, %q",
					d.ID, d.Attempts, d.ErrorClass, d.LastError, tc.attempts, tc.gaveUp)
			}
			h, err := s.ListHistory(context.Background(), tc.msg.ID)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, e := range h {
				lines = append(lines, e.Reason)
			}
			if all := strings.Join(lines, "\n"); !strings.Contains(all, tc.retry) || !strings.Contains(all, tc.gaveUp) {
				t.Errorf("history of message %d:\n%s\nwant the lines %q and %q", tc.msg.ID, all, tc.retry, tc.gaveUp)
			}
		}
	})
}
