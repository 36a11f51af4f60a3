package db_test

import (
	"context"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// An ordered session goes once it has been idle for SessionIdle with nothing left to
// deliver; a session with a delivery still open stays however old it is.
func TestPruneIdleSessions(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		start, ctx := time.Now(), context.Background()
		done := insertSession(t, s, 1, "writer|done")[0]
		insertSession(t, s, 1, "writer|open")
		c := claimAll(t, s, writer, start)
		for _, x := range c {
			if x.Delivery.ID == done.ID {
				must(t, complete(t, s, persistence.Completion{DeliveryID: x.Delivery.ID, Token: x.Delivery.ClaimToken,
					Kind: persistence.OutcomeDelivered})[0])
			}
		}
		count := func() int64 {
			return must1[int64](t)(db.QueryInt(ctx, s, `SELECT COUNT(*) FROM sessions`))
		}
		if n := must1[int](t)(s.PruneIdleSessions(ctx, start.Add(db.SessionIdle-time.Hour), 100)); n != 0 || count() != 2 {
			t.Fatalf("before the idle time: %d pruned, %d sessions left; want 0 and 2", n, count())
		}
		if n := must1[int](t)(s.PruneIdleSessions(ctx, start.Add(db.SessionIdle+time.Hour), 100)); n != 1 {
			t.Fatalf("after the idle time: %d pruned, want 1", n)
		}
		if left := must1[int64](t)(db.QueryInt(ctx, s, `SELECT COUNT(*) FROM sessions WHERE key = 'writer|open'`)); left != 1 || count() != 1 {
			t.Fatalf("the session with an open delivery went (%d left of it, %d in all)", left, count())
		}
	})
}

// The webhook-id of an applied callback refuses a repeat for CallbackIDsKept, and goes
// after it.
func TestPruneCallbackIDs(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		start, ctx := time.Now(), context.Background()
		d, _ := awaiting(t, s, "job-1", start.Add(time.Hour))
		cb := persistence.StatusCallback{Target: writer, WebhookID: "w1", Status: "received", ReportedAt: start, DeliveryID: d.ID}
		apply := func() persistence.CallbackOutcome {
			return must1[[]persistence.CallbackOutcome](t)(s.ApplyCallbacks(ctx, []persistence.StatusCallback{cb}))[0]
		}
		if got := apply(); got != persistence.CallbackApplied {
			t.Fatalf("first callback: %s", got)
		}
		if n := must1[int](t)(s.PruneCallbackIDs(ctx, start.Add(db.CallbackIDsKept-time.Minute), 100)); n != 0 {
			t.Fatalf("%d ids pruned inside the window", n)
		}
		if got := apply(); got != persistence.CallbackDuplicate {
			t.Fatalf("repeat inside the window: %s, want duplicate", got)
		}
		if n := must1[int](t)(s.PruneCallbackIDs(ctx, start.Add(db.CallbackIDsKept+time.Minute), 100)); n != 1 {
			t.Fatalf("%d ids pruned after the window, want 1", n)
		}
	})
}
