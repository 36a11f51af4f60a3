package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// deliverAll completes every claimable delivery of target as delivered.
func (b *bundle) deliverAll(t *testing.T, target persistence.InstanceName) {
	t.Helper()
	ctx := context.Background()
	claims, err := b.store.ClaimDeliveries(ctx, target, 100, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var cs []persistence.Completion
	for _, c := range claims {
		cs = append(cs, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered, At: time.Now()})
	}
	if _, err := b.store.CompleteDeliveries(ctx, cs); err != nil {
		t.Fatal(err)
	}
}

func TestErasure(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		done := b.sendTo(t, "inbox", "local", "acme", "secret-order.edi", "order 4711")
		b.deliverAll(t, "inbox")
		busy := b.sendTo(t, "inbox", "local", "acme", "pending.edi", "order 4712")
		rng := fmt.Sprintf(`{"party":"acme","from":%q,"to":%q}`,
			time.Now().Add(-time.Hour).Format(time.RFC3339), time.Now().Add(time.Hour).Format(time.RFC3339))

		var dry erasureAnswer
		b.must(200, "POST", "/api/v1/erasures?dry_run=true", rng).json(t, &dry)
		if !dry.DryRun || dry.Erasable != 1 || dry.InFlight != 1 || dry.Erased != 0 {
			t.Fatalf("dry run = %+v, want 1 erasable and 1 in flight", dry)
		}
		if got := b.must(200, "GET", fmt.Sprintf("/api/v1/messages/%d", done.ID), ""); string(got.body) == "" {
			t.Fatal("empty message")
		}

		bad := []struct {
			name, path, body string
			fields           []string
		}{
			{"empty filter", "/api/v1/erasures", `{}`, []string{"party", "from", "to"}},
			{"range backwards", "/api/v1/erasures", `{"party":"acme","from":"2026-02-01T00:00:00Z","to":"2026-01-01T00:00:00Z"}`, []string{"to"}},
			{"bad dry_run", "/api/v1/erasures?dry_run=perhaps", rng, []string{"dry_run"}},
			{"unknown field", "/api/v1/erasures", `{"party":"acme","since":"x"}`, []string{"since"}},
		}
		for _, tc := range bad {
			t.Run(tc.name, func(t *testing.T) {
				e := b.must(400, "POST", tc.path, tc.body).errorOf(t)
				for _, f := range tc.fields {
					if _, ok := e.Details[f]; !ok {
						t.Errorf("details %v lack %s", e.Details, f)
					}
				}
			})
		}
		if e := b.must(409, "POST", fmt.Sprintf("/api/v1/messages/%d/erase", busy.ID), "").errorOf(t); e.Code != "NOT_ERASABLE" {
			t.Fatalf("erase in flight: %+v", e)
		}

		var res erasureAnswer
		b.must(200, "POST", "/api/v1/erasures", rng).json(t, &res)
		if res.DryRun || res.Erased != 1 || res.InFlight != 1 || res.PayloadsRemoved != 1 {
			t.Fatalf("erasure = %+v, want 1 erased with its payload and 1 in flight", res)
		}
		var m messageDetail
		b.must(200, "GET", fmt.Sprintf("/api/v1/messages/%d", done.ID), "").json(t, &m)
		if m.OriginalFileName != persistence.ErasedFileName || m.ErasedAt == nil || m.Status != persistence.StatusDelivered {
			t.Fatalf("erased message = %+v", m.Message)
		}
		refused := []struct{ name, method, path, code string }{
			{"download", "GET", fmt.Sprintf("/api/v1/messages/%d/payload", done.ID), "MESSAGE_ERASED"},
			{"redispatch", "POST", fmt.Sprintf("/api/v1/messages/%d/redispatch", done.ID), "MESSAGE_ERASED"},
			{"redeliver", "POST", fmt.Sprintf("/api/v1/messages/%d/deliveries/%d/redeliver", done.ID, m.Deliveries[0].ID), "MESSAGE_ERASED"},
			{"erase again", "POST", fmt.Sprintf("/api/v1/messages/%d/erase", done.ID), "MESSAGE_ERASED"},
		}
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				r := b.do(tc.method, tc.path, "")
				want := 409
				if tc.method == "GET" {
					want = 410
				}
				if e := r.errorOf(t); r.status != want || e.Code != tc.code {
					t.Fatalf("%s = %d %+v, want %d %s", tc.name, r.status, e, want, tc.code)
				}
			})
		}

		b.deliverAll(t, "inbox")
		b.must(200, "POST", fmt.Sprintf("/api/v1/messages/%d/erase", busy.ID), "").json(t, &m)
		if m.ErasedAt == nil || m.OriginalFileName != persistence.ErasedFileName {
			t.Fatalf("single erasure = %+v", m.Message)
		}
		b.must(404, "POST", "/api/v1/messages/999999/erase", "")
	})
}
