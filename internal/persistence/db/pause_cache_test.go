package db_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// TestClaimReadsNoPausesWhileNoneIsKnown: once a claim found no partner paused, the
// claims that follow do not read the pauses again; a pause made here is heard at its
// commit, and the next claim holds the partner's due deliveries.
func TestClaimReadsNoPausesWhileNoneIsKnown(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: sender, Type: persistence.PluginAS2Sender, Enabled: true}))
		now := time.Now()
		claimAll(t, s, sender, now)
		_, st0 := db.Counts(s)
		if claims := claimAll(t, s, sender, now); len(claims) != 0 {
			t.Fatalf("claimed %d, want none", len(claims))
		}
		if _, st1 := db.Counts(s); st1-st0 != 1 {
			t.Fatalf("a claim of nothing with no partner paused ran %d statements, want the claim alone", st1-st0)
		}

		must1[persistence.PartnerPause](t)(s.PausePartner(ctx, beta, "their certificate expired", "user:alice"))
		msgs := outbound(t, s, beta, 2, sender)
		if claims := claimAll(t, s, sender, now); len(claims) != 0 {
			t.Fatalf("claimed %d deliveries to a paused partner", len(claims))
		}
		for _, m := range msgs {
			wantState(t, s, deliveryTo(t, s, m, sender).ID, persistence.DeliveryPaused)
		}
		checkInvariants(t, s)
	})
}

// TestClaimHearsPausesOfOtherProcesses: a store that knows no partner is paused reads
// the pauses again when told another process paused one (PausesChanged, which the
// gateway calls on the bus's announcement), and then holds the partner's deliveries.
func TestClaimHearsPausesOfOtherProcesses(t *testing.T) {
	url := dbtest.PostgresURL(t)
	ctx := context.Background()
	here, there := openStore(t, url), openStore(t, url)
	fixture(t, here)
	must1[persistence.PluginConfig](t)(here.CreatePluginConfig(ctx, persistence.PluginConfig{Name: sender, Type: persistence.PluginAS2Sender, Enabled: true}))
	now := time.Now()
	claimAll(t, here, sender, now) // finds no pause

	must1[persistence.PartnerPause](t)(there.PausePartner(ctx, beta, "their certificate expired", "user:alice"))
	msgs := outbound(t, there, beta, 2, sender)
	here.PausesChanged()
	if claims := claimAll(t, here, sender, now); len(claims) != 0 {
		t.Fatalf("claimed %d deliveries to a partner another process paused", len(claims))
	}
	for _, m := range msgs {
		wantState(t, here, deliveryTo(t, here, m, sender).ID, persistence.DeliveryPaused)
	}
	checkInvariants(t, here)
}

// openStore opens a store on url, as a process of its own would, closed when the test
// ends.
func openStore(t *testing.T, url string) *db.Store {
	t.Helper()
	s, err := db.Open(context.Background(), db.Options{URL: url, AuditKey: dbtest.AuditKey, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
