package db_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// deadLetterFixture makes a blocked session (writer|a: one failed, two parked), a failed
// unordered delivery of beta to poster, and a delivered one that is no dead letter.
func deadLetterFixture(t *testing.T, s *db.Store) (session []persistence.Delivery, lone, done persistence.Delivery) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	session = insertSession(t, s, 3, "writer|a")
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, 2))
	fromBeta := newMessage(first, true, poster)
	fromBeta.Message.From = beta
	must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{fromBeta, newMessage(first+1, true, spare)}))
	lone, done = deliveriesOf(t, s, first)[0], deliveriesOf(t, s, first+1)[0]
	c := claimWant(t, s, now, session[0].ID)
	complete(t, s, persistence.Completion{DeliveryID: c[0].Delivery.ID, Token: c[0].Delivery.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "HTTP 400", ErrorClass: "http_4xx"})
	for _, tg := range []persistence.InstanceName{poster, spare} {
		c := claimAll(t, s, tg, now)
		kind := persistence.OutcomeFailed
		if tg == spare {
			kind = persistence.OutcomeDelivered
		}
		complete(t, s, persistence.Completion{DeliveryID: c[0].Delivery.ID, Token: c[0].Delivery.ClaimToken, Kind: kind, Reason: "refused", ErrorClass: "partner_refusal"})
	}
	return session, lone, done
}

func deadLetterIDs(list []persistence.DeadLetter) []int64 {
	out := make([]int64, len(list))
	for i, d := range list {
		out[i] = d.ID
	}
	return out
}

// The dead letters are the failed and parked deliveries, each filter narrowing them.
func TestListDeadLetters(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		a, lone, _ := deadLetterFixture(t, s)
		future := time.Now().Add(time.Hour)
		all := []int64{a[0].ID, a[1].ID, a[2].ID, lone.ID}
		for _, tc := range []struct {
			name string
			f    persistence.DeadLetterFilter
			want []int64
		}{
			{"all", persistence.DeadLetterFilter{}, all},
			{"failed", persistence.DeadLetterFilter{State: persistence.DeliveryFailed}, []int64{a[0].ID, lone.ID}},
			{"parked", persistence.DeadLetterFilter{State: persistence.DeliveryParked}, []int64{a[1].ID, a[2].ID}},
			{"target", persistence.DeadLetterFilter{Target: poster}, []int64{lone.ID}},
			{"party as sender", persistence.DeadLetterFilter{Party: beta}, []int64{lone.ID}},
			{"party on either side", persistence.DeadLetterFilter{Party: local}, all},
			{"session", persistence.DeadLetterFilter{Session: "writer|a"}, []int64{a[0].ID, a[1].ID, a[2].ID}},
			{"error class", persistence.DeadLetterFilter{ErrorClass: "http_4xx"}, []int64{a[0].ID}},
			{"another error class", persistence.DeadLetterFilter{ErrorClass: "partner_refusal"}, []int64{lone.ID}},
			{"older than", persistence.DeadLetterFilter{CreatedBefore: future}, all},
			{"newer than", persistence.DeadLetterFilter{CreatedAfter: future}, nil},
			{"ids", persistence.DeadLetterFilter{IDs: []int64{lone.ID, a[2].ID, 999999}}, []int64{a[2].ID, lone.ID}},
			{"ids and state", persistence.DeadLetterFilter{IDs: []int64{lone.ID, a[2].ID}, State: persistence.DeliveryParked}, []int64{a[2].ID}},
			{"paged", persistence.DeadLetterFilter{ListOptions: persistence.ListOptions{Limit: 2, Offset: 1}}, all[1:3]},
		} {
			t.Run(tc.name, func(t *testing.T) {
				list, total, err := s.ListDeadLetters(ctx, tc.f)
				must(t, err)
				if got := deadLetterIDs(list); !slices.Equal(got, tc.want) {
					t.Fatalf("listed %v, want %v", got, tc.want)
				}
				if tc.f.Limit == 0 && total != len(tc.want) {
					t.Fatalf("total = %d, want %d", total, len(tc.want))
				}
			})
		}
		list, total, err := s.ListDeadLetters(ctx, persistence.DeadLetterFilter{Target: poster})
		must(t, err)
		if total != 1 || list[0].From != beta || list[0].To != local || list[0].FileName == "" ||
			list[0].LastError != "refused" || list[0].State != persistence.DeliveryFailed || list[0].AgeSeconds < 0 {
			t.Fatalf("dead letter = %+v", list)
		}
		_, _, err = s.ListDeadLetters(ctx, persistence.DeadLetterFilter{State: persistence.DeliveryQueued})
		wantField(t, err, "state")
	})
}

// A bulk action applies to the deliveries in a state it takes, answers per id, and
// writes one audit event naming the actor and how many it changed.
func TestActOnDeliveries(t *testing.T) {
	for _, tc := range []struct {
		action persistence.DeliveryAction
		// pick chooses the ids from the blocked session, the failed lone delivery and
		// the delivered one.
		pick   func(a []persistence.Delivery, lone, done persistence.Delivery) []int64
		want   []persistence.DeliveryState // the result per id; "" is a conflict
		count  string
		parked []persistence.DeliveryState // the session's deliveries afterwards
	}{
		{
			action: persistence.ActionSkip,
			pick: func(a []persistence.Delivery, lone, done persistence.Delivery) []int64 {
				return []int64{a[1].ID, lone.ID, done.ID}
			},
			want:  []persistence.DeliveryState{"skipped", "skipped", ""},
			count: "2", parked: []persistence.DeliveryState{"failed", "skipped", "parked"},
		},
		{
			action: persistence.ActionSkip,
			pick:   func(a []persistence.Delivery, _, _ persistence.Delivery) []int64 { return []int64{a[0].ID} },
			want:   []persistence.DeliveryState{"skipped"},
			count:  "1", parked: []persistence.DeliveryState{"skipped", "queued", "queued"},
		},
		{
			action: persistence.ActionResubmit,
			pick: func(a []persistence.Delivery, lone, _ persistence.Delivery) []int64 {
				return []int64{lone.ID, a[0].ID, a[1].ID}
			},
			want:  []persistence.DeliveryState{"queued", "queued", ""},
			count: "2", parked: []persistence.DeliveryState{"queued", "parked", "parked"},
		},
		{
			action: persistence.ActionRedeliver,
			pick: func(a []persistence.Delivery, lone, done persistence.Delivery) []int64 {
				return []int64{a[2].ID, a[0].ID, done.ID}
			},
			want:  []persistence.DeliveryState{"", "queued", "queued"},
			count: "2", parked: []persistence.DeliveryState{"queued", "parked", "parked"},
		},
	} {
		t.Run(string(tc.action), func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				ctx := context.Background()
				a, lone, done := deadLetterFixture(t, s)
				ids := tc.pick(a, lone, done)
				res, err := s.ActOnDeliveries(ctx, tc.action, ids, "user:carol")
				must(t, err)
				for i, r := range res {
					switch {
					case r.ID != ids[i]:
						t.Fatalf("result %d is for %d, want %d", i, r.ID, ids[i])
					case tc.want[i] == "" && !errors.Is(r.Err, persistence.ErrConflict):
						t.Fatalf("result for %d = %+v, want a conflict", r.ID, r)
					case tc.want[i] != "" && (r.Err != nil || r.Delivery.State != tc.want[i]):
						t.Fatalf("result for %d = %v %s, want %s", r.ID, r.Err, r.Delivery.State, tc.want[i])
					}
				}
				if got := states(t, s, a); !slices.Equal(got, tc.parked) {
					t.Fatalf("session afterwards = %v, want %v", got, tc.parked)
				}
				var bulk []string
				for _, e := range auditEvents(t, s) {
					if e.Action == "bulk_"+string(tc.action) {
						bulk = append(bulk, e.Actor+" "+changesOf(e))
					}
				}
				if len(bulk) != 1 || !containsAll(bulk[0], "user:carol", `"path":"count","new":`+tc.count) {
					t.Fatalf("bulk audit events = %q", bulk)
				}
				checkInvariants(t, s)
			})
		})
	}
	forEach(t, func(t *testing.T, s *db.Store) {
		_, err := s.ActOnDeliveries(context.Background(), persistence.ActionSkip, nil, "user:carol")
		wantField(t, err, "ids")
		_, err = s.ActOnDeliveries(context.Background(), "purge", []int64{1}, "user:carol")
		wantField(t, err, "action")
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
