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

// insertSession inserts n messages dispatched to writer in the ordered session key.
func insertSession(t testing.TB, s *db.Store, n int, key string) []persistence.Delivery {
	t.Helper()
	ctx := context.Background()
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, n))
	batch := make([]persistence.NewMessage, n)
	for i := range batch {
		batch[i] = newMessage(first+int64(i), true, writer)
		batch[i].Sessions = map[persistence.InstanceName]persistence.DeliverySession{writer: {Key: key}}
	}
	must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
	var out []persistence.Delivery
	for i := range batch {
		out = append(out, deliveriesOf(t, s, first+int64(i))[0])
	}
	return out
}

// sessionAlerts records the store's session alerts.
type sessionAlerts struct {
	mu  sync.Mutex
	got []db.SessionAlert
}

func watchSessions(s *db.Store) *sessionAlerts {
	a := &sessionAlerts{}
	s.OnSessionAlert(func(x db.SessionAlert) {
		a.mu.Lock()
		a.got = append(a.got, x)
		a.mu.Unlock()
	})
	return a
}

func (a *sessionAlerts) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, x := range a.got {
		what := "blocked"
		if x.Resolved {
			what = "unblocked"
		}
		out = append(out, fmt.Sprintf("%s %s by %d", what, x.Key, x.DeliveryID))
	}
	a.got = nil
	return out
}

// claimOne claims the deliveries of writer at now and wants exactly want.
func claimWant(t *testing.T, s *db.Store, now time.Time, want ...int64) []persistence.Claim {
	t.Helper()
	got := claimAll(t, s, writer, now)
	if !slices.Equal(claimIDs(got), want) {
		t.Fatalf("claimed %v, want %v", claimIDs(got), want)
	}
	return got
}

func states(t *testing.T, s *db.Store, ds []persistence.Delivery) []persistence.DeliveryState {
	t.Helper()
	out := make([]persistence.DeliveryState, len(ds))
	for i, d := range ds {
		out[i] = delivery(t, s, d.ID).State
	}
	return out
}

// A failed delivery blocks its session: the later ones are parked in the same
// transaction, another session goes on, the session is listed and alerted once, a
// dispatch into it is parked, and resubmit or skip recovers it in order.
func TestSessionBlockAndRecover(t *testing.T) {
	for _, action := range []string{"resubmit", "skip"} {
		t.Run(action, func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				ctx := context.Background()
				now := time.Now()
				alerts := watchSessions(s)
				a := insertSession(t, s, 3, "writer|a")
				b := insertSession(t, s, 2, "writer|b")
				c := claimWant(t, s, now, a[0].ID, b[0].ID)
				complete(t, s,
					persistence.Completion{DeliveryID: c[0].Delivery.ID, Token: c[0].Delivery.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "HTTP 400"},
					persistence.Completion{DeliveryID: c[1].Delivery.ID, Token: c[1].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered})
				if got := states(t, s, a); !slices.Equal(got, []persistence.DeliveryState{"failed", "parked", "parked"}) {
					t.Fatalf("session a = %v", got)
				}
				wantStatus(t, s, a[1].MessageID, persistence.StageDispatched, persistence.StatusHeld)
				if got := alerts.take(); !slices.Equal(got, []string{fmt.Sprintf("blocked writer|a by %d", a[0].ID)}) {
					t.Fatalf("alerts = %q", got)
				}
				h := history(t, s, a[1].MessageID)
				if last := h[len(h)-2]; last.Reason != fmt.Sprintf("parked: session blocked by delivery %d", a[0].ID) || last.ToState != "parked" {
					t.Fatalf("history of a parked delivery ends %+v", h[len(h)-2:])
				}
				// The other session goes on.
				claimWant(t, s, now, b[1].ID)

				// A dispatch into the blocked session is parked at once.
				late := insertSession(t, s, 1, "writer|a")[0]
				if late.State != persistence.DeliveryParked || late.SessionKey != "writer|a" {
					t.Fatalf("dispatched into a blocked session: %+v", late)
				}
				a = append(a, late)

				list, total := must1s(t)(s.ListBlockedSessions(ctx, persistence.SessionFilter{}))
				if total != 1 || len(list) != 1 {
					t.Fatalf("blocked sessions = %d %+v", total, list)
				}
				got := list[0]
				if got.Key != "writer|a" || got.Target != writer || got.From != acme || got.To != local || got.BlockedBy != a[0].ID ||
					got.BlockingMessage != a[0].MessageID || got.Error != "HTTP 400" || got.Parked != 3 || got.OldestParkedAt == nil {
					t.Fatalf("blocked session = %+v", got)
				}
				for _, f := range []persistence.SessionFilter{{Target: spare}, {Party: beta}} {
					if _, n := must1s(t)(s.ListBlockedSessions(ctx, f)); n != 0 {
						t.Fatalf("filter %+v lists %d sessions", f, n)
					}
				}
				if _, n := must1s(t)(s.ListBlockedSessions(ctx, persistence.SessionFilter{Target: writer, Party: acme})); n != 1 {
					t.Fatalf("filter by target and party lists %d sessions", n)
				}
				pos := deliveriesOf(t, s, a[2].MessageID)[0].SessionPosition
				if pos == nil || *pos != 2 {
					t.Fatalf("session position of the third = %v, want 2", pos)
				}

				switch action {
				case "resubmit":
					res := must1[[]persistence.DeliveryActionResult](t)(s.ResubmitDeliveries(ctx, []int64{a[0].ID}, "user:bob"))
					if res[0].Err != nil || res[0].Delivery.State != persistence.DeliveryQueued {
						t.Fatalf("resubmit = %+v", res)
					}
					// Still blocked: the parked ones wait until the blocker is delivered.
					if got := states(t, s, a); !slices.Equal(got, []persistence.DeliveryState{"queued", "parked", "parked", "parked"}) {
						t.Fatalf("after resubmit = %v", got)
					}
					c = claimWant(t, s, now, a[0].ID)
					complete(t, s, persistence.Completion{DeliveryID: c[0].Delivery.ID, Token: c[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered})
				case "skip":
					res := must1[[]persistence.DeliveryActionResult](t)(s.SkipDeliveries(ctx, []int64{a[0].ID}, "user:bob"))
					if res[0].Err != nil || res[0].Delivery.State != persistence.DeliverySkipped {
						t.Fatalf("skip = %+v", res)
					}
				}
				if got := states(t, s, a[1:]); !slices.Equal(got, []persistence.DeliveryState{"queued", "queued", "queued"}) {
					t.Fatalf("after the blocker settled, the rest are %v", got)
				}
				if got := alerts.take(); !slices.Equal(got, []string{fmt.Sprintf("unblocked writer|a by %d", a[0].ID)}) {
					t.Fatalf("alerts = %q", got)
				}
				if _, n := must1s(t)(s.ListBlockedSessions(ctx, persistence.SessionFilter{})); n != 0 {
					t.Fatalf("%d sessions still blocked", n)
				}
				// Released in order: one at a time.
				for _, d := range a[1:] {
					c := claimWant(t, s, now, d.ID)
					complete(t, s, persistence.Completion{DeliveryID: d.ID, Token: c[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered})
				}
				var actions []string
				for _, e := range history(t, s, a[0].MessageID) {
					if e.Actor == "user:bob" {
						actions = append(actions, fmt.Sprintf("%s %s→%s", e.Kind, e.FromState, e.ToState))
					}
				}
				want := map[string][]string{
					"resubmit": {"resubmit_requested failed→queued", "delivery_changed failed→queued", "status_changed error→in_progress"},
					"skip":     {"skip_requested failed→skipped", "delivery_changed failed→skipped", "status_changed error→skipped"},
				}[action]
				if !slices.Equal(actions, want) {
					t.Fatalf("history by bob = %q, want %q", actions, want)
				}
				var actors []string
				for _, e := range auditEvents(t, s) {
					if e.Action == action {
						actors = append(actors, e.Actor)
					}
				}
				if !slices.Equal(actors, []string{"user:bob"}) {
					t.Fatalf("actors of the audit events of %s = %v", action, actors)
				}
				checkInvariants(t, s)
			})
		})
	}
}

func must1s(t testing.TB) func([]persistence.BlockedSession, int, error) ([]persistence.BlockedSession, int) {
	return func(b []persistence.BlockedSession, n int, err error) ([]persistence.BlockedSession, int) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b, n
	}
}

// Every path to failed blocks the session in its own transaction; a retry does not.
func TestSessionBlockingPaths(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func(t *testing.T, s *db.Store, c persistence.Delivery, now time.Time)
		block bool
	}{
		{"permanent failure", func(t *testing.T, s *db.Store, c persistence.Delivery, now time.Time) {
			complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "HTTP 404"})
		}, true},
		{"retry", func(t *testing.T, s *db.Store, c persistence.Delivery, now time.Time) {
			complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeRetry, NextAttemptAt: now.Add(time.Minute), Reason: "HTTP 503"})
		}, false},
		{"receipt deadline", func(t *testing.T, s *db.Store, c persistence.Delivery, now time.Time) {
			complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeAwaitingAck, AckDeadline: now.Add(time.Minute)})
			must1[[]persistence.Delivery](t)(s.ExpireAcks(context.Background(), now.Add(2*time.Minute), 10))
		}, true},
		{"negative receipt", func(t *testing.T, s *db.Store, c persistence.Delivery, now time.Time) {
			complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeAwaitingAck, AckDeadline: now.Add(time.Hour)})
			must1[persistence.Delivery](t)(s.SettleDelivery(context.Background(), c.ID, false, "refused by partner", "partner"))
		}, true},
		{"lease expiry", func(t *testing.T, s *db.Store, c persistence.Delivery, now time.Time) {
			must1[[]persistence.Delivery](t)(s.ExpireLeases(context.Background(), now.Add(2*time.Minute), 10))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				now := time.Now()
				alerts := watchSessions(s)
				ds := insertSession(t, s, 3, "writer|x")
				c := claimWant(t, s, now, ds[0].ID)[0].Delivery
				tc.fail(t, s, c, now)
				later := states(t, s, ds[1:])
				want := []persistence.DeliveryState{"queued", "queued"}
				if tc.block {
					want = []persistence.DeliveryState{"parked", "parked"}
				}
				if !slices.Equal(later, want) {
					t.Fatalf("later deliveries = %v, want %v", later, want)
				}
				if got := len(alerts.take()); got != map[bool]int{true: 1, false: 0}[tc.block] {
					t.Fatalf("%d session alerts", got)
				}
				// Waiting behind an unsettled head is never claimable, blocked or not.
				if got := claimAll(t, s, writer, now); slices.Contains(claimIDs(got), ds[1].ID) {
					t.Fatalf("claimed %v behind the head", claimIDs(got))
				}
				checkInvariants(t, s)
			})
		})
	}
}

// A late outcome never reopens or re-blocks a settled delivery, and a redelivery of the
// blocking delivery never parks it behind itself.
func TestSessionLateOutcomes(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		alerts := watchSessions(s)
		ds := insertSession(t, s, 3, "writer|late")
		first := claimWant(t, s, now, ds[0].ID)[0].Delivery
		// The lease expires; the retry is claimed again under a new token.
		must1[[]persistence.Delivery](t)(s.ExpireLeases(ctx, now.Add(2*time.Minute), 10))
		second := claimWant(t, s, now.Add(3*time.Minute), ds[0].ID)[0].Delivery
		// The first attempt's outcome comes late: it is dropped.
		res := complete(t, s, persistence.Completion{DeliveryID: first.ID, Token: first.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "late"})
		wantErr(t, res[0], persistence.ErrLostClaim)
		if got := states(t, s, ds); !slices.Equal(got, []persistence.DeliveryState{"delivering", "queued", "queued"}) {
			t.Fatalf("after a late failure = %v", got)
		}
		complete(t, s, persistence.Completion{DeliveryID: second.ID, Token: second.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "HTTP 422"})
		// A positive receipt for the failed delivery does not reopen it.
		if d := must1[persistence.Delivery](t)(s.SettleDelivery(ctx, ds[0].ID, true, "", "partner")); d.State != persistence.DeliveryFailed {
			t.Fatalf("receipt reopened the failed delivery: %s", d.State)
		}
		// Redeliver the blocker: it is queued, never parked behind itself; the rest stay parked.
		must1[persistence.Delivery](t)(s.Redeliver(ctx, ds[0].ID, persistence.ResendSame, "user:bob"))
		if got := states(t, s, ds); !slices.Equal(got, []persistence.DeliveryState{"queued", "parked", "parked"}) {
			t.Fatalf("after redeliver = %v", got)
		}
		third := claimWant(t, s, now, ds[0].ID)[0].Delivery
		// It fails again: the session stays blocked by it, with one alert in all.
		complete(t, s, persistence.Completion{DeliveryID: third.ID, Token: third.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "HTTP 422"})
		if got := alerts.take(); len(got) != 1 {
			t.Fatalf("alerts = %q, want one", got)
		}
		must1[[]persistence.DeliveryActionResult](t)(s.SkipDeliveries(ctx, []int64{ds[0].ID}, "user:bob"))
		// Receipts for the skipped delivery change nothing.
		for _, ok := range []bool{true, false} {
			if d := must1[persistence.Delivery](t)(s.SettleDelivery(ctx, ds[0].ID, ok, "late", "partner")); d.State != persistence.DeliverySkipped {
				t.Fatalf("receipt changed a skipped delivery to %s", d.State)
			}
		}
		if got := states(t, s, ds); !slices.Equal(got, []persistence.DeliveryState{"skipped", "queued", "queued"}) {
			t.Fatalf("after skip and late receipts = %v", got)
		}
		if got := alerts.take(); len(got) != 1 || !strings.HasPrefix(got[0], "unblocked") {
			t.Fatalf("alerts = %q", got)
		}
		checkInvariants(t, s)
	})
}

// Resubmit and skip refuse, per delivery, a state they do not apply to; the others of the
// batch are applied.
func TestSessionActionConflicts(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		ds := insertSession(t, s, 3, "writer|c")
		c := claimWant(t, s, now, ds[0].ID)[0].Delivery
		complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "no"})
		// ds[0] failed, ds[1] and ds[2] parked.
		for _, tc := range []struct {
			name string
			act  func([]int64) ([]persistence.DeliveryActionResult, error)
			ids  []int64
			errs []error
		}{
			{"resubmit parked and missing", func(ids []int64) ([]persistence.DeliveryActionResult, error) {
				return s.ResubmitDeliveries(ctx, ids, "bob")
			}, []int64{ds[1].ID, 1 << 40}, []error{persistence.ErrConflict, persistence.ErrNotFound}},
			{"skip a parked one", func(ids []int64) ([]persistence.DeliveryActionResult, error) {
				return s.SkipDeliveries(ctx, ids, "bob")
			}, []int64{ds[2].ID, ds[2].ID}, []error{nil, nil}},
			{"skip it again", func(ids []int64) ([]persistence.DeliveryActionResult, error) {
				return s.SkipDeliveries(ctx, ids, "bob")
			}, []int64{ds[2].ID}, []error{persistence.ErrConflict}},
		} {
			res, err := tc.act(tc.ids)
			must(t, err)
			for i, r := range res {
				if r.ID != tc.ids[i] || (tc.errs[i] == nil) != (r.Err == nil) || (r.Err != nil && !errors.Is(r.Err, tc.errs[i])) {
					t.Fatalf("%s: result %d = %+v, want error %v", tc.name, i, r, tc.errs[i])
				}
			}
		}
		// Skipping a parked one leaves the session blocked and the rest parked.
		if got := states(t, s, ds); !slices.Equal(got, []persistence.DeliveryState{"failed", "parked", "skipped"}) {
			t.Fatalf("states = %v", got)
		}
		for _, ids := range [][]int64{nil, make([]int64, 1001)} {
			_, err := s.SkipDeliveries(ctx, ids, "bob")
			wantField(t, err, "ids")
		}
		checkInvariants(t, s)
	})
}

// Metadata are stored with the message, bounded, and a session_by needs an ordered route.
func TestMetadataAndSessionBy(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 2))
		nm := newMessage(first, true, writer)
		nm.Message.Metadata = map[string]string{"Subject": "order 7", "x-order-id": "7"}
		m := must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{nm}))[0]
		want := map[string]string{"subject": "order 7", "x-order-id": "7"}
		if got := message(t, s, m.ID).Metadata; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stored metadata = %v, want %v", got, want)
		}
		for _, tc := range []struct {
			meta  map[string]string
			field string
		}{
			{map[string]string{"bad name": "x"}, "messages[0].metadata"},
			{map[string]string{"ok": "a\nb"}, "messages[0].metadata.ok"},
			{map[string]string{"ok": strings.Repeat("x", 257)}, "messages[0].metadata.ok"},
		} {
			bad := newMessage(first+1, true, writer)
			bad.Message.Metadata = tc.meta
			_, err := s.InsertMessages(ctx, []persistence.NewMessage{bad})
			wantField(t, err, tc.field)
		}
		for _, tc := range []struct {
			r     persistence.Route
			field string
		}{
			{persistence.Route{Source: poller, From: "*", To: "acme", Target: writer, SessionBy: "order"}, "session_by"},
			{persistence.Route{Source: poller, From: "*", To: "acme", Target: writer, Ordered: true, SessionBy: "Bad Name"}, "session_by"},
		} {
			_, err := s.CreateRoute(ctx, tc.r)
			wantField(t, err, tc.field)
		}
		r := must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: "acme", Target: writer, Ordered: true, SessionBy: "order"}))
		if got := must1[persistence.Route](t)(s.GetRoute(ctx, r.ID)); got.SessionBy != "order" || !got.Ordered {
			t.Fatalf("stored route = %+v", got)
		}
	})
}
