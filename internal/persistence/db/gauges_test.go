package db_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// OnChanges hears every delivery transition and every status a message enters, the
// received status of a new message included, once per commit that made them.
func TestOnChangesReportsTransitions(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		var mu sync.Mutex
		var got db.Changes
		s.OnChanges(func(c db.Changes) {
			mu.Lock()
			defer mu.Unlock()
			got.Deliveries = append(got.Deliveries, c.Deliveries...)
			got.Messages = append(got.Messages, c.Messages...)
		})
		now := time.Now()
		insert(t, s, 2, writer)
		claims := claimAll(t, s, writer, now)
		if len(claims) != 2 {
			t.Fatalf("claimed %d, want 2", len(claims))
		}
		complete(t, s, persistence.Completion{DeliveryID: claims[0].Delivery.ID, Token: claims[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered},
			persistence.Completion{DeliveryID: claims[1].Delivery.ID, Token: claims[1].Delivery.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "refused"})

		mu.Lock()
		defer mu.Unlock()
		count := func(from, to persistence.DeliveryState) int {
			n := 0
			for _, d := range got.Deliveries {
				if d.Target == writer && d.From == from && d.To == to {
					n++
				}
			}
			return n
		}
		if count(persistence.DeliveryQueued, persistence.DeliveryDelivering) != 2 ||
			count(persistence.DeliveryDelivering, persistence.DeliveryDelivered) != 1 ||
			count(persistence.DeliveryDelivering, persistence.DeliveryFailed) != 1 || len(got.Deliveries) != 4 {
			t.Fatalf("delivery changes = %+v", got.Deliveries)
		}
		var statuses []persistence.MessageStatus
		for _, m := range got.Messages {
			if m.Source != poller || m.From != acme {
				t.Fatalf("status change %+v names the wrong source or sender", m)
			}
			statuses = append(statuses, m.Status)
		}
		slices.Sort(statuses)
		want := []persistence.MessageStatus{persistence.StatusDelivered, persistence.StatusError,
			persistence.StatusInProgress, persistence.StatusInProgress, persistence.StatusReceived, persistence.StatusReceived}
		slices.Sort(want)
		if !slices.Equal(statuses, want) {
			t.Fatalf("statuses entered = %v, want %v", statuses, want)
		}
	})
}

// CountOpenDeliveries counts what is not final by target and state; delivered and failed
// deliveries are left out.
func TestCountOpenDeliveries(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		insert(t, s, 3, writer)
		insert(t, s, 2, poster)
		claims := claimAll(t, s, writer, now)
		complete(t, s, persistence.Completion{DeliveryID: claims[0].Delivery.ID, Token: claims[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered},
			persistence.Completion{DeliveryID: claims[1].Delivery.ID, Token: claims[1].Delivery.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "no"})
		got := must1[[]db.TargetStateCount](t)(s.CountOpenDeliveries(ctx))
		want := []db.TargetStateCount{
			{Target: poster, State: persistence.DeliveryQueued, Count: 2},
			{Target: writer, State: persistence.DeliveryDelivering, Count: 1},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("CountOpenDeliveries = %+v, want %+v", got, want)
		}
	})
}

// CertificateExpiryByUse reports the soonest end per use kind and for unused
// certificates, and nothing for a kind without certificates.
func TestCertificateExpiryByUse(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		if got := must1[map[string]time.Time](t)(s.CertificateExpiryByUse(ctx)); len(got) != 0 {
			t.Fatalf("no certificates: %v", got)
		}
		f := newCertFixture(t)
		created := must1[[]persistence.Certificate](t)(s.CreateCertificates(ctx, f.recs))
		leaf, ca := created[0], created[1]
		must(t, s.SetCertificateUses(ctx, "as2_local_profile", "local", []int64{leaf.ID}))
		got := must1[map[string]time.Time](t)(s.CertificateExpiryByUse(ctx))
		if len(got) != 2 || !got["as2_local_profile"].Equal(leaf.NotAfter) || !got[db.UnusedCertificate].Equal(ca.NotAfter) {
			t.Fatalf("CertificateExpiryByUse = %v, want the leaf's %v for the profile and the CA's %v unused", got, leaf.NotAfter, ca.NotAfter)
		}
	})
}
