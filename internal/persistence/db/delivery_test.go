package db_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

func TestClaimTakesOldestDueFirst(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		msgs := insert(t, s, 4, writer, poster)
		now := time.Now()
		claims := must1[[]persistence.Claim](t)(s.ClaimDeliveries(ctx, writer, 2, time.Minute, now))
		if len(claims) != 2 {
			t.Fatalf("claimed %d, want 2", len(claims))
		}
		for i, c := range claims {
			d := c.Delivery
			if c.Message.ID != msgs[i].ID || d.Target != writer {
				t.Fatalf("claim %d is delivery %d of message %d to %s; want the oldest of writer", i, d.ID, c.Message.ID, d.Target)
			}
			if d.State != persistence.DeliveryDelivering || d.Attempts != 1 || d.ClaimToken == "" || d.Wakeups != 0 ||
				d.LeaseUntil == nil || !d.LeaseUntil.Equal(now.Add(time.Minute).UTC().Truncate(time.Microsecond)) {
				t.Fatalf("claimed delivery %+v", d)
			}
			if c.Message.Status != persistence.StatusInProgress || c.Message.OriginalFileName == "" {
				t.Fatalf("claim carries message %+v", c.Message)
			}
			if got := delivery(t, s, d.ID); got.ClaimToken != d.ClaimToken {
				t.Fatalf("stored token %q, returned %q", got.ClaimToken, d.ClaimToken)
			}
		}
		if claims[0].Delivery.ClaimToken == claims[1].Delivery.ClaimToken {
			t.Fatal("two claims share a token")
		}
		h := history(t, s, msgs[0].ID)
		if last := h[len(h)-1]; last.Kind != persistence.HistoryDeliveryChanged || last.FromState != "queued" ||
			last.ToState != "delivering" || last.Reason != "attempt 1" || last.Actor != "system" || last.DeliveryID == nil {
			t.Fatalf("claim history line = %+v", last)
		}
		rest := claimAll(t, s, writer, now)
		if got := ids(rest, func(c persistence.Claim) int64 { return c.Message.ID }); !slices.Equal(got, []int64{msgs[2].ID, msgs[3].ID}) {
			t.Fatalf("second claim took messages %v", got)
		}
		if again := claimAll(t, s, writer, now); len(again) != 0 {
			t.Fatalf("claimed %d deliveries that were already claimed", len(again))
		}
		if others := claimAll(t, s, poster, now); len(others) != 4 {
			t.Fatalf("poster claims = %d, want 4", len(others))
		}
		checkInvariants(t, s)
	})
}

func TestRetryingIsClaimedWhenDue(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		now := time.Now()
		m := insert(t, s, 1, writer)[0]
		c := claimAll(t, s, writer, now)[0]
		later := now.Add(10 * time.Minute)
		complete(t, s, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeRetry,
			NextAttemptAt: later, Reason: "connection refused"})
		if got := claimAll(t, s, writer, later.Add(-time.Second)); len(got) != 0 {
			t.Fatalf("claimed a retry before it was due: %+v", got)
		}
		got := claimAll(t, s, writer, later)
		if len(got) != 1 || got[0].Delivery.Attempts != 2 || got[0].Message.ID != m.ID {
			t.Fatalf("due retry claims = %+v", got)
		}
	})
}

// Many claimers racing over one target never take the same delivery twice, and together
// take every one.
func TestConcurrentClaimsAreExclusive(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		const total, workers = 300, 8
		insert(t, s, total/3, writer)
		insert(t, s, total/3, writer)
		insert(t, s, total/3, writer)
		var (
			mu    sync.Mutex
			taken = make(map[int64]int)
			wg    sync.WaitGroup
			errs  = make(chan error, workers)
		)
		for range workers {
			wg.Go(func() {
				for {
					cs, err := s.ClaimDeliveries(ctx, writer, 7, time.Minute, time.Now())
					if err != nil {
						errs <- err
						return
					}
					if len(cs) == 0 {
						return
					}
					mu.Lock()
					for _, c := range cs {
						taken[c.Delivery.ID]++
					}
					mu.Unlock()
					// Complete half of them, concurrently with other claims.
					var done []persistence.Completion
					for _, c := range cs[:len(cs)/2] {
						done = append(done, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered})
					}
					res, err := s.CompleteDeliveries(ctx, done)
					if err != nil {
						errs <- err
						return
					}
					for _, e := range res {
						if e != nil {
							errs <- e
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(taken) != total {
			t.Fatalf("claimed %d distinct deliveries, want %d", len(taken), total)
		}
		for id, n := range taken {
			if n != 1 {
				t.Fatalf("delivery %d claimed %d times", id, n)
			}
		}
		checkInvariants(t, s)
	})
}

func TestCompletions(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		msgs := insert(t, s, 4, writer)
		cs := claimAll(t, s, writer, now)
		deadline := now.Add(time.Hour)
		retryAt := now.Add(5 * time.Minute)
		res := complete(t, s,
			persistence.Completion{DeliveryID: cs[0].Delivery.ID, Token: cs[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered, Reason: "written"},
			persistence.Completion{DeliveryID: cs[1].Delivery.ID, Token: cs[1].Delivery.ClaimToken, Kind: persistence.OutcomeAwaitingAck, AckDeadline: deadline},
			persistence.Completion{DeliveryID: cs[2].Delivery.ID, Token: cs[2].Delivery.ClaimToken, Kind: persistence.OutcomeRetry, NextAttemptAt: retryAt,
				Reason: "Post \"https://user:pw@partner.example/as2?x=1\": dial tcp:\nconnection refused"},
			persistence.Completion{DeliveryID: cs[3].Delivery.ID, Token: cs[3].Delivery.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "HTTP 403"},
		)
		for i, err := range res {
			if err != nil {
				t.Fatalf("completion %d: %v", i, err)
			}
		}
		d := wantState(t, s, cs[0].Delivery.ID, persistence.DeliveryDelivered)
		if d.ClaimToken != "" || d.LeaseUntil != nil || d.NextAttemptAt != nil {
			t.Fatalf("delivered delivery keeps claim data: %+v", d)
		}
		wantStatus(t, s, msgs[0].ID, persistence.StageSettled, persistence.StatusDelivered)

		d = wantState(t, s, cs[1].Delivery.ID, persistence.DeliveryAwaitingAck)
		if d.AckDeadline == nil || !d.AckDeadline.Equal(deadline.UTC().Truncate(time.Microsecond)) {
			t.Fatalf("ack deadline = %v, want %v", d.AckDeadline, deadline)
		}
		wantStatus(t, s, msgs[1].ID, persistence.StageDispatched, persistence.StatusAwaitingReceipt)

		d = wantState(t, s, cs[2].Delivery.ID, persistence.DeliveryRetrying)
		wantReason := `Post "[url]": dial tcp: connection refused`
		if d.LastError != wantReason || !d.NextAttemptAt.Equal(retryAt.UTC().Truncate(time.Microsecond)) || !d.NextWakeupAt.Equal(*d.NextAttemptAt) {
			t.Fatalf("retrying delivery %+v, want last_error %q", d, wantReason)
		}
		wantStatus(t, s, msgs[2].ID, persistence.StageDispatched, persistence.StatusRetrying)
		h := history(t, s, msgs[2].ID)
		if got := h[len(h)-2]; got.Reason != wantReason || got.ToState != "retrying" {
			t.Fatalf("retry history = %+v", got)
		}

		d = wantState(t, s, cs[3].Delivery.ID, persistence.DeliveryFailed)
		if d.LastError != "HTTP 403" {
			t.Fatalf("failed last_error = %q", d.LastError)
		}
		wantStatus(t, s, msgs[3].ID, persistence.StageSettled, persistence.StatusError)
		if got, want := kinds(history(t, s, msgs[3].ID)), []string{"received", "dispatched", "status_changed received→in_progress",
			"delivery_changed queued→delivering", "delivery_changed delivering→failed", "status_changed in_progress→error"}; !slices.Equal(got, want) {
			t.Fatalf("history = %q, want %q", got, want)
		}
		_, err := s.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: 1, Token: "x", Kind: persistence.OutcomeAwaitingAck}})
		wantField(t, err, "ack_deadline")
		checkInvariants(t, s)
	})
}

func TestLostClaims(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		insert(t, s, 3, writer)
		cs := claimAll(t, s, writer, now)
		a, b, c := cs[0].Delivery, cs[1].Delivery, cs[2].Delivery

		wantErr(t, s.RenewLease(ctx, a.ID, "forged", now.Add(time.Hour)), persistence.ErrLostClaim)
		wantErr(t, s.RenewLease(ctx, a.ID, "", now.Add(time.Hour)), persistence.ErrLostClaim)
		must(t, s.RenewLease(ctx, a.ID, a.ClaimToken, now.Add(time.Hour)))
		if got := delivery(t, s, a.ID); !got.LeaseUntil.Equal(now.Add(time.Hour).UTC().Truncate(time.Microsecond)) {
			t.Fatalf("renewed lease = %v", got.LeaseUntil)
		}

		res := complete(t, s,
			persistence.Completion{DeliveryID: a.ID, Token: "forged", Kind: persistence.OutcomeDelivered},
			persistence.Completion{DeliveryID: b.ID, Token: b.ClaimToken, Kind: persistence.OutcomeDelivered},
			persistence.Completion{DeliveryID: b.ID, Token: b.ClaimToken, Kind: persistence.OutcomeFailed},
			persistence.Completion{DeliveryID: c.ID, Token: a.ClaimToken, Kind: persistence.OutcomeDelivered},
		)
		for i, want := range []error{persistence.ErrLostClaim, nil, persistence.ErrLostClaim, persistence.ErrLostClaim} {
			if !errors.Is(res[i], want) || (want == nil && res[i] != nil) {
				t.Fatalf("result %d = %v, want %v", i, res[i], want)
			}
		}
		wantState(t, s, a.ID, persistence.DeliveryDelivering)
		wantState(t, s, b.ID, persistence.DeliveryDelivered)
		wantState(t, s, c.ID, persistence.DeliveryDelivering)
		wantErr(t, s.RenewLease(ctx, b.ID, b.ClaimToken, now.Add(time.Hour)), persistence.ErrLostClaim)

		err := s.ReleaseDeliveries(ctx, []persistence.Release{
			{DeliveryID: c.ID, Token: c.ClaimToken, Reason: "shutting down"},
			{DeliveryID: b.ID, Token: b.ClaimToken},
		})
		wantErr(t, err, persistence.ErrLostClaim)
		wantState(t, s, c.ID, persistence.DeliveryQueued)
		checkInvariants(t, s)
	})
}

func TestRelease(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		m := insert(t, s, 1, writer)[0]
		c := claimAll(t, s, writer, now)[0].Delivery
		must(t, s.ReleaseDeliveries(ctx, []persistence.Release{{DeliveryID: c.ID, Token: c.ClaimToken, Reason: "shutting down"}}))
		d := wantState(t, s, c.ID, persistence.DeliveryQueued)
		if d.Attempts != 0 || d.ClaimToken != "" || d.LeaseUntil != nil || d.NextAttemptAt == nil {
			t.Fatalf("released delivery %+v: want attempt uncounted, claim cleared, due", d)
		}
		h := history(t, s, m.ID)
		if last := h[len(h)-1]; last.FromState != "delivering" || last.ToState != "queued" || last.Reason != "shutting down" {
			t.Fatalf("release history = %+v", last)
		}
		if again := claimAll(t, s, writer, now); len(again) != 1 || again[0].Delivery.Attempts != 1 {
			t.Fatalf("released delivery not claimable again: %+v", again)
		}
		checkInvariants(t, s)
	})
}

func TestExpireLeases(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		m := insert(t, s, 2, writer)
		cs := claimAll(t, s, writer, now)
		must(t, s.RenewLease(ctx, cs[1].Delivery.ID, cs[1].Delivery.ClaimToken, now.Add(time.Hour)))
		if got := must1[[]persistence.Delivery](t)(s.ExpireLeases(ctx, now.Add(30*time.Second), 10)); len(got) != 0 {
			t.Fatalf("expired live leases: %v", got)
		}
		later := now.Add(2 * time.Minute)
		got := must1[[]persistence.Delivery](t)(s.ExpireLeases(ctx, later, 10))
		if len(got) != 1 || got[0].ID != cs[0].Delivery.ID {
			t.Fatalf("expired %v, want only delivery %d", deliveryIDs(got), cs[0].Delivery.ID)
		}
		d := wantState(t, s, cs[0].Delivery.ID, persistence.DeliveryRetrying)
		if d.LastError != "lease expired" || d.ClaimToken != "" || d.LeaseUntil != nil ||
			!d.NextAttemptAt.Equal(later.UTC().Truncate(time.Microsecond)) {
			t.Fatalf("expired delivery %+v", d)
		}
		wantStatus(t, s, m[0].ID, persistence.StageDispatched, persistence.StatusRetrying)
		res := complete(t, s, persistence.Completion{DeliveryID: d.ID, Token: cs[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered})
		wantErr(t, res[0], persistence.ErrLostClaim)
		if again := claimAll(t, s, writer, later); len(again) != 1 || again[0].Delivery.ID != d.ID {
			t.Fatalf("expired delivery not claimable: %+v", again)
		}
		checkInvariants(t, s)
	})
}

func TestWakeDueStallsAfterMaxDispatches(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		m := insert(t, s, 1, writer)[0]
		d := deliveriesOf(t, s, m.ID)[0]
		policy := persistence.WakeupPolicy{MaxDispatches: 3, Backoff: func(n int) time.Duration { return time.Duration(n) * time.Minute }}

		if woken, stalled := wake(t, s, d.NextWakeupAt.Add(-time.Second), policy); len(woken)+len(stalled) != 0 {
			t.Fatalf("woken before the grace ran out: %v %v", woken, stalled)
		}
		at := *d.NextWakeupAt
		for n := 1; n <= 3; n++ {
			woken, stalled := wake(t, s, at, policy)
			if len(woken) != 1 || len(stalled) != 0 || woken[0].Wakeups != n ||
				!woken[0].NextWakeupAt.Equal(at.Add(time.Duration(n)*time.Minute)) {
				t.Fatalf("wake-up %d: woken %+v, stalled %+v", n, woken, stalled)
			}
			if again, _ := wake(t, s, at, policy); len(again) != 0 {
				t.Fatalf("woken twice at the same time: %+v", again)
			}
			at = *woken[0].NextWakeupAt
		}
		woken, stalled := wake(t, s, at, policy)
		if len(woken) != 0 || len(stalled) != 1 || stalled[0].State != persistence.DeliveryStalled {
			t.Fatalf("after 3 wake-ups: woken %+v, stalled %+v", woken, stalled)
		}
		wantStatus(t, s, m.ID, persistence.StageDispatched, persistence.StatusStalled)
		h := history(t, s, m.ID)
		if got := h[len(h)-2]; got.ToState != "stalled" || got.Reason != "no worker claimed it after 3 wake-ups" {
			t.Fatalf("stall history = %+v", got)
		}
		if got := claimAll(t, s, writer, at); len(got) != 0 {
			t.Fatalf("claimed a stalled delivery: %+v", got)
		}
		// A claim resets the count.
		m2 := insert(t, s, 1, writer)[0]
		d2 := deliveriesOf(t, s, m2.ID)[0]
		wake(t, s, *d2.NextWakeupAt, policy)
		c := claimAll(t, s, writer, *d2.NextWakeupAt)[0]
		if c.Delivery.Wakeups != 0 {
			t.Fatalf("claim kept %d wake-ups", c.Delivery.Wakeups)
		}
		checkInvariants(t, s)
	})
}

func wake(t *testing.T, s *db.Store, now time.Time, p persistence.WakeupPolicy) (woken, stalled []persistence.Delivery) {
	t.Helper()
	woken, stalled, err := s.WakeDue(context.Background(), now, p, 100)
	must(t, err)
	return woken, stalled
}

func TestExpireAcks(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		m := insert(t, s, 1, writer)[0]
		c := claimAll(t, s, writer, now)[0].Delivery
		complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeAwaitingAck, AckDeadline: now.Add(time.Hour)})
		if got := must1[[]persistence.Delivery](t)(s.ExpireAcks(ctx, now.Add(59*time.Minute), 10)); len(got) != 0 {
			t.Fatalf("expired before the deadline: %v", got)
		}
		got := must1[[]persistence.Delivery](t)(s.ExpireAcks(ctx, now.Add(61*time.Minute), 10))
		if len(got) != 1 || got[0].State != persistence.DeliveryFailed || got[0].LastError != "no receipt or completion report before the deadline" || got[0].AckDeadline != nil {
			t.Fatalf("ExpireAcks = %+v", got)
		}
		wantStatus(t, s, m.ID, persistence.StageSettled, persistence.StatusError)
		checkInvariants(t, s)
	})
}

func TestSweepLimitsTakeOldestFirst(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		insert(t, s, 5, writer)
		cs := claimAll(t, s, writer, now)
		got := must1[[]persistence.Delivery](t)(s.ExpireLeases(ctx, now.Add(time.Hour), 2))
		if want := claimIDs(cs[:2]); !slices.Equal(deliveryIDs(got), want) {
			t.Fatalf("expired %v, want the oldest two %v", deliveryIDs(got), want)
		}
	})
}

func TestRedispatch(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		d := deliveriesOf(t, s, m.ID)[0]
		policy := persistence.WakeupPolicy{MaxDispatches: 1, Backoff: func(int) time.Duration { return time.Minute }}
		wake(t, s, *d.NextWakeupAt, policy)
		wake(t, s, d.NextWakeupAt.Add(time.Hour), policy)
		wantState(t, s, d.ID, persistence.DeliveryStalled)

		due := must1[[]persistence.Delivery](t)(s.Redispatch(ctx, m.ID, []persistence.InstanceName{writer, poster, poster}, nil, nil, "alice"))
		if len(due) != 2 || due[0].ID != d.ID || due[1].Target != poster {
			t.Fatalf("Redispatch returned %+v, want the requeued writer and a new poster delivery", due)
		}
		for _, x := range due {
			if x.State != persistence.DeliveryQueued || x.Wakeups != 0 {
				t.Fatalf("redispatched delivery %+v", x)
			}
		}
		wantStatus(t, s, m.ID, persistence.StageDispatched, persistence.StatusInProgress)
		h := history(t, s, m.ID)
		tail := h[len(h)-3:]
		if tail[0].Kind != persistence.HistoryRedispatchRequested || tail[0].Actor != "alice" || tail[0].Reason != "added poster; requeued 1" {
			t.Fatalf("redispatch line = %+v", tail[0])
		}
		if tail[1].FromState != "stalled" || tail[1].ToState != "queued" || tail[1].Actor != "alice" {
			t.Fatalf("requeue line = %+v", tail[1])
		}
		if tail[2].Kind != persistence.HistoryStatusChanged || tail[2].Actor != "alice" {
			t.Fatalf("status line = %+v", tail[2])
		}

		_, err := s.Redispatch(ctx, m.ID+1000, nil, nil, nil, "alice")
		wantErr(t, err, persistence.ErrNotFound)

		// A message its source still holds is dispatched by Redispatch.
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{newMessage(first, false)}))
		due = must1[[]persistence.Delivery](t)(s.Redispatch(ctx, first, []persistence.InstanceName{writer}, nil, nil, ""))
		if len(due) != 1 {
			t.Fatalf("dispatching an accepted message returned %+v", due)
		}
		wantStatus(t, s, first, persistence.StageDispatched, persistence.StatusInProgress)
		if got := kinds(history(t, s, first)); !slices.Equal(got, []string{"received", "dispatched", "status_changed received→in_progress"}) {
			t.Fatalf("history = %q", got)
		}
		checkInvariants(t, s)
	})
}

func TestRedeliver(t *testing.T) {
	type setup func(t *testing.T, s *db.Store, now time.Time) persistence.Delivery
	claimOne := func(t *testing.T, s *db.Store, now time.Time) persistence.Delivery {
		insert(t, s, 1, writer)
		return claimAll(t, s, writer, now)[0].Delivery
	}
	completed := func(kind persistence.OutcomeKind) setup {
		return func(t *testing.T, s *db.Store, now time.Time) persistence.Delivery {
			d := claimOne(t, s, now)
			complete(t, s, persistence.Completion{DeliveryID: d.ID, Token: d.ClaimToken, Kind: kind,
				NextAttemptAt: now.Add(time.Hour), AckDeadline: now.Add(time.Hour), Reason: "x"})
			return d
		}
	}
	for _, tc := range []struct {
		state persistence.DeliveryState
		setup setup
		ok    bool
	}{
		{persistence.DeliveryFailed, completed(persistence.OutcomeFailed), true},
		{persistence.DeliveryRetrying, completed(persistence.OutcomeRetry), true},
		{persistence.DeliveryDelivered, completed(persistence.OutcomeDelivered), true},
		{persistence.DeliveryStalled, func(t *testing.T, s *db.Store, now time.Time) persistence.Delivery {
			m := insert(t, s, 1, writer)[0]
			d := deliveriesOf(t, s, m.ID)[0]
			p := persistence.WakeupPolicy{MaxDispatches: 1}
			wake(t, s, *d.NextWakeupAt, p)
			wake(t, s, d.NextWakeupAt.Add(time.Hour), p)
			return d
		}, true},
		{persistence.DeliveryAwaitingAck, completed(persistence.OutcomeAwaitingAck), false},
		{persistence.DeliveryDelivering, claimOne, false},
		{persistence.DeliveryQueued, func(t *testing.T, s *db.Store, now time.Time) persistence.Delivery {
			return deliveriesOf(t, s, insert(t, s, 1, writer)[0].ID)[0]
		}, false},
	} {
		t.Run(string(tc.state), func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				ctx := context.Background()
				d := tc.setup(t, s, time.Now())
				wantState(t, s, d.ID, tc.state)
				got, err := s.Redeliver(ctx, d.ID, persistence.ResendSame, "bob")
				if !tc.ok {
					wantErr(t, err, persistence.ErrConflict)
					if !strings.Contains(err.Error(), string(tc.state)) {
						t.Fatalf("conflict %q does not name the state", err)
					}
					wantState(t, s, d.ID, tc.state)
					return
				}
				must(t, err)
				if got.State != persistence.DeliveryQueued || got.Wakeups != 0 || got.AckDeadline != nil || got.NextAttemptAt == nil {
					t.Fatalf("redelivered %+v", got)
				}
				h := history(t, s, d.MessageID)
				var tail []string
				for _, e := range h {
					if e.Actor == "bob" {
						tail = append(tail, fmt.Sprintf("%s %s→%s", e.Kind, e.FromState, e.ToState))
					}
				}
				if len(tail) < 2 || tail[0] != fmt.Sprintf("redeliver_requested %s→queued", tc.state) ||
					tail[1] != fmt.Sprintf("delivery_changed %s→queued", tc.state) {
					t.Fatalf("history by bob = %q", tail)
				}
				wantStatus(t, s, d.MessageID, persistence.StageDispatched, persistence.StatusInProgress)
				checkInvariants(t, s)
			})
		})
	}
	forEach(t, func(t *testing.T, s *db.Store) {
		_, err := s.Redeliver(context.Background(), 1<<40, persistence.ResendSame, "bob")
		wantErr(t, err, persistence.ErrNotFound)
	})
}

// A delivery with a session key waits while an earlier delivery of its session is
// neither delivered nor skipped.
func TestSessionOrder(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		msgs := insert(t, s, 5, writer)
		var ds []persistence.Delivery
		for _, m := range msgs {
			ds = append(ds, deliveriesOf(t, s, m.ID)[0])
		}
		// d0, d1, d3 share session a; d2 is in session b; d4 has none.
		for i, key := range []string{"a", "a", "b", "a", ""} {
			must(t, db.ExecRaw(ctx, s, `UPDATE deliveries SET session_key = ? WHERE id = ?`, key, ds[i].ID))
		}
		got := claimAll(t, s, writer, now)
		if want := []int64{ds[0].ID, ds[2].ID, ds[4].ID}; !slices.Equal(claimIDs(got), want) {
			t.Fatalf("claimed %v, want the head of each session and the unordered one %v", claimIDs(got), want)
		}
		byID := func(id int64) persistence.Delivery {
			for _, c := range got {
				if c.Delivery.ID == id {
					return c.Delivery
				}
			}
			t.Fatalf("delivery %d not claimed", id)
			return persistence.Delivery{}
		}
		d0 := byID(ds[0].ID)
		complete(t, s, persistence.Completion{DeliveryID: d0.ID, Token: d0.ClaimToken, Kind: persistence.OutcomeDelivered})
		next := claimAll(t, s, writer, now)
		if !slices.Equal(claimIDs(next), []int64{ds[1].ID}) {
			t.Fatalf("after the head was delivered, claimed %v, want %d", claimIDs(next), ds[1].ID)
		}
		d1 := next[0].Delivery
		complete(t, s, persistence.Completion{DeliveryID: d1.ID, Token: d1.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "x"})
		if blocked := claimAll(t, s, writer, now); len(blocked) != 0 {
			t.Fatalf("claimed %v behind a failed delivery of the session", claimIDs(blocked))
		}
		// Waiting behind the session is not going unclaimed: no wake-ups, no stall.
		woken, stalled := wake(t, s, now.Add(time.Hour), persistence.WakeupPolicy{MaxDispatches: 1})
		if len(woken)+len(stalled) != 0 {
			t.Fatalf("woke %v and stalled %v behind a blocked session", deliveryIDs(woken), deliveryIDs(stalled))
		}
		if parked := wantState(t, s, ds[3].ID, persistence.DeliveryParked); parked.NextAttemptAt != nil {
			t.Fatalf("parked delivery is due at %v", parked.NextAttemptAt)
		}
		must1[[]persistence.DeliveryActionResult](t)(s.SkipDeliveries(ctx, []int64{d1.ID}, "bob"))
		if next := claimAll(t, s, writer, now); !slices.Equal(claimIDs(next), []int64{ds[3].ID}) {
			t.Fatalf("after a skip, claimed %v, want %d", claimIDs(next), ds[3].ID)
		}
	})
}
