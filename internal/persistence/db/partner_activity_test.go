package db_test

import (
	"context"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// partnerTraffic inserts messages between local and acme: each row its age, direction
// and what became of it.
func partnerTraffic(t *testing.T, s *db.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	type row struct {
		age     time.Duration
		toAcme  bool
		outcome string // delivered, failed, refused, retrying or "" (in progress)
	}
	rows := []row{
		{time.Hour, true, "delivered"},
		{2 * time.Hour, true, "failed"},
		{3 * time.Hour, false, "refused"},
		{30 * time.Hour, false, ""},
		{50 * time.Hour, true, "retrying"},
		{48 * time.Hour, true, "delivered"},
		{8 * 24 * time.Hour, false, "refused"}, // outside the window: neither counted nor open
		{9 * 24 * time.Hour, true, "failed"},   // outside the window, still open
	}
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, len(rows)))
	batch := make([]persistence.NewMessage, len(rows))
	for i, r := range rows {
		nm := newMessage(first+int64(i), true, writer)
		if r.toAcme {
			nm.Message.From, nm.Message.To = local, acme
		}
		if r.outcome == "refused" {
			nm = newMessage(first+int64(i), true)
			nm.Message.Refusal, nm.RefusalReason = persistence.RefusalRefused, "bad signature"
		}
		nm.Message.CreatedAt = now.Add(-r.age)
		batch[i] = nm
	}
	must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
	claims := claimAll(t, s, writer, now)
	byMessage := map[int64]persistence.Claim{}
	for _, c := range claims {
		byMessage[c.Message.ID] = c
	}
	var cs []persistence.Completion
	for i, r := range rows {
		c, ok := byMessage[first+int64(i)]
		if !ok {
			continue
		}
		comp := persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, At: now}
		switch r.outcome {
		case "delivered":
			comp.Kind = persistence.OutcomeDelivered
		case "failed":
			comp.Kind, comp.Reason = persistence.OutcomeFailed, "HTTP 500"
		case "retrying":
			comp.Kind, comp.Reason, comp.NextAttemptAt = persistence.OutcomeRetry, "timeout", now.Add(time.Minute)
		default:
			continue
		}
		cs = append(cs, comp)
	}
	for _, err := range complete(t, s, cs...) {
		must(t, err)
	}
}

func TestPartnerActivity(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
		if a := must1[persistence.PartnerActivity](t)(s.PartnerActivity(ctx, acme, now)); a.Ever || a.Problems != 0 || !a.LastDelivered.IsZero() {
			t.Fatalf("no traffic yet = %+v", a)
		}
		partnerTraffic(t, s, now)
		got := must1[persistence.PartnerActivity](t)(s.PartnerActivity(ctx, acme, now))
		want := persistence.PartnerActivity{Partner: acme, Ever: true,
			LastDelivered: now.Add(-time.Hour), LastReceived: now.Add(-30 * time.Hour),
			Messages24h: 3, Failed24h: 2, Messages7d: 6, Failed7d: 2,
			// failed (2 h), refused (3 h), retrying, failed (9 days)
			Problems: 4}
		if got != want {
			t.Errorf("activity =\n%+v\nwant\n%+v", got, want)
		}
		if b := must1[persistence.PartnerActivity](t)(s.PartnerActivity(ctx, beta, now)); b.Ever || b.Messages7d != 0 {
			t.Errorf("beta = %+v", b)
		}
	})
}

func TestPartnerCertificates(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		f := newCertFixture(t)
		created := must1[[]persistence.Certificate](t)(s.CreateCertificates(ctx, f.recs))
		leaf, ca := created[0], created[1]
		// The profile named after acme uses both; a plugin instance that happens to be
		// called acme is not the partner.
		must(t, s.SetCertificateUses(ctx, "as2_remote_profile", string(acme), []int64{ca.ID, leaf.ID}))
		must(t, s.SetCertificateUses(ctx, "plugin_instance", string(beta), []int64{leaf.ID}))
		got := must1[[]persistence.Certificate](t)(s.PartnerCertificates(ctx, acme))
		soonest, later := leaf, ca
		if ca.NotAfter.Before(leaf.NotAfter) {
			soonest, later = ca, leaf
		}
		if len(got) != 2 || got[0].ID != soonest.ID || got[1].ID != later.ID {
			t.Fatalf("certificates of acme = %+v", got)
		}
		if got := must1[[]persistence.Certificate](t)(s.PartnerCertificates(ctx, beta)); len(got) != 0 {
			t.Errorf("a plugin instance's certificates count as beta's: %+v", got)
		}
		a := must1[persistence.PartnerActivity](t)(s.PartnerActivity(ctx, acme, time.Now()))
		if !a.CertificateExpiry.Equal(soonest.NotAfter) {
			t.Errorf("expiry = %v, want %v", a.CertificateExpiry, soonest.NotAfter)
		}
	})
}

func TestCountProblemsByPartner(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
		partnerTraffic(t, s, now)
		got := must1[[]persistence.PartnerCount](t)(s.CountProblemsByPartner(ctx, now.Add(-7*24*time.Hour), 10))
		if len(got) != 1 || got[0] != (persistence.PartnerCount{Partner: acme, Count: 4}) {
			t.Errorf("counts = %+v", got)
		}
		if got := must1[[]persistence.PartnerCount](t)(s.CountProblemsByPartner(ctx, now, 10)); len(got) != 1 || got[0].Count != 3 {
			t.Errorf("without refusals = %+v", got)
		}
	})
}

func TestSetupProgress(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		step := func(want persistence.SetupProgress) {
			t.Helper()
			if got := must1[persistence.SetupProgress](t)(s.SetupProgress(ctx)); got != want {
				t.Errorf("progress = %+v, want %+v", got, want)
			}
		}
		step(persistence.SetupProgress{})
		must1[persistence.Party](t)(s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyOrganization, Name: local}))
		step(persistence.SetupProgress{Organization: local})
		f := newCertFixture(t)
		created := must1[[]persistence.Certificate](t)(s.CreateCertificates(ctx, f.recs))
		// A certificate without a key is no identity.
		must(t, s.SetCertificateUses(ctx, "as2_local_profile", string(local), []int64{created[1].ID}))
		step(persistence.SetupProgress{Organization: local})
		must(t, s.SetCertificateUses(ctx, "as2_local_profile", string(local), []int64{created[0].ID}))
		step(persistence.SetupProgress{Organization: local, Identity: true})
		must1[persistence.Party](t)(s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: acme}))
		step(persistence.SetupProgress{Organization: local, Identity: true, HasPartner: true, Partner: acme})
		must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: poller, Type: persistence.PluginFilePoller, Enabled: true}))
		id := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
		nm := newMessage(id, false)
		nm.Message.From, nm.Message.To = local, acme
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{nm}))
		step(persistence.SetupProgress{Organization: local, Identity: true, HasPartner: true, Partner: acme, Sent: true})
	})
}
