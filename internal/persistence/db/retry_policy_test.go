package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/retry"
)

func intp(n int) *int { return &n }

// TestUpdateRoute edits a route: its fields and retry override change in place, the
// audit event lists the fields that changed, an edit that would cover another route of
// the same source and target is refused, and an invalid override names its field.
func TestUpdateRoute(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := audit.WithActor(context.Background(), "user:alice")
		r := must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: persistence.PartyPattern(local), Target: writer}))
		other := must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: "*", Target: poster}))
		before := len(auditEvents(t, s))

		edit := r
		edit.Ordered = true
		edit.Retry = &retry.Policy{MaxRetries: intp(3), Rules: retry.Rules{HTTP5xx: &retry.Rule{Strategy: retry.Fixed, Base: retry.Duration(time.Minute)}}}
		got := must1[persistence.Route](t)(s.UpdateRoute(ctx, edit))
		if got.ID != r.ID || !got.Ordered || !got.CreatedAt.Equal(r.CreatedAt) || got.Retry == nil ||
			got.Retry.Rules.For(retry.ClassHTTP5xx) == nil || *got.Retry.MaxRetries != 3 {
			t.Fatalf("UpdateRoute = %+v", got)
		}
		if stored := must1[persistence.Route](t)(s.GetRoute(ctx, r.ID)); stored.Retry == nil || *stored.Retry.MaxRetries != 3 || !stored.Ordered {
			t.Fatalf("stored route %+v", stored)
		}
		events := auditEvents(t, s)[before:]
		if len(events) != 1 || events[0].Action != "update" || events[0].Kind != "route" || events[0].Actor != "user:alice" {
			t.Fatalf("audit events %+v", events)
		}
		for _, want := range []string{`"path":"ordered","old":false,"new":true`, `"path":"retry.max_retries"`, `"path":"retry.rules.http_5xx.base","new":"1m0s"`} {
			if c := changesOf(events[0]); !strings.Contains(c, want) {
				t.Errorf("audit changes %s lack %s", c, want)
			}
		}

		// Back to the target's policy.
		edit.Retry = nil
		if got := must1[persistence.Route](t)(s.UpdateRoute(ctx, edit)); got.Retry != nil {
			t.Fatalf("route keeps override %+v", got.Retry)
		}

		// Moved onto the other route's target, it would cover it.
		clash := r
		clash.Target = poster
		_, err := s.UpdateRoute(ctx, clash)
		wantErr(t, err, persistence.ErrConflict)
		if !strings.Contains(err.Error(), "route "+itoa(other.ID)) {
			t.Fatalf("conflict %q does not name route %d", err, other.ID)
		}

		bad := r
		bad.Retry = &retry.Policy{Rules: retry.Rules{HTTP4xx: &retry.Rule{Never: true, MaxRetries: intp(2)}}}
		_, err = s.UpdateRoute(ctx, bad)
		wantField(t, err, "retry.rules.http_4xx.never")
		_, err = s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: "*", Target: spare, Retry: bad.Retry})
		wantField(t, err, "retry.rules.http_4xx.never")

		missing := r
		missing.ID = other.ID + 100
		_, err = s.UpdateRoute(ctx, missing)
		wantErr(t, err, persistence.ErrNotFound)
		if n := len(auditEvents(t, s)) - before; n != 2 {
			t.Fatalf("%d audit events, want 2 (refused edits write none)", n)
		}
	})
}

// TestDeliveryKeepsRoutePolicyAndErrorClass: a delivery carries the retry override it
// was dispatched with (also when redispatch adds it), and its error class is set by a
// retry or a failure and cleared by success.
func TestDeliveryKeepsRoutePolicyAndErrorClass(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		policy := &retry.Policy{Rules: retry.Rules{HTTP5xx: &retry.Rule{MaxRetries: intp(8)}}}
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
		nm := newMessage(first, true, writer, poster)
		nm.Retry = map[persistence.InstanceName]*retry.Policy{poster: policy}
		m := must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{nm}))[0]

		now := time.Now()
		c := claimAll(t, s, poster, now)[0]
		if c.Delivery.Retry == nil || c.Delivery.Retry.Rules.For(retry.ClassHTTP5xx) == nil {
			t.Fatalf("claimed delivery's policy %+v", c.Delivery.Retry)
		}
		if w := claimAll(t, s, writer, now)[0]; w.Delivery.Retry != nil {
			t.Fatalf("writer's delivery has policy %+v", w.Delivery.Retry)
		}

		steps := []struct {
			kind  persistence.OutcomeKind
			class string
			want  string
		}{
			{persistence.OutcomeRetry, "http_5xx", "http_5xx"},
			{persistence.OutcomeFailed, "partner_refusal", "partner_refusal"},
			{persistence.OutcomeDelivered, "", ""},
		}
		for _, st := range steps {
			complete(t, s, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: st.kind,
				ErrorClass: st.class, Reason: "step", NextAttemptAt: now})
			if got := delivery(t, s, c.Delivery.ID); got.ErrorClass != st.want {
				t.Fatalf("after %s: error class %q, want %q", st.kind, got.ErrorClass, st.want)
			}
			if st.kind == persistence.OutcomeFailed {
				must1[persistence.Delivery](t)(s.Redeliver(ctx, c.Delivery.ID, persistence.ResendSame, "alice"))
			}
			if st.kind != persistence.OutcomeDelivered {
				c = claimAll(t, s, poster, now.Add(time.Hour))[0]
			}
		}
		_, err := s.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: c.Delivery.ID, Kind: persistence.OutcomeFailed, ErrorClass: "bad_luck"}})
		wantField(t, err, "error_class")

		// Redispatch adds a delivery for a new target with its route's override.
		added := must1[[]persistence.Delivery](t)(s.Redispatch(ctx, m.ID, []persistence.InstanceName{spare},
			nil, map[persistence.InstanceName]*retry.Policy{spare: policy}, "alice"))
		if len(added) != 1 || added[0].Retry == nil || *added[0].Retry.Rules.HTTP5xx.MaxRetries != 8 {
			t.Fatalf("redispatched deliveries %+v", added)
		}
		checkInvariants(t, s)
	})
}
