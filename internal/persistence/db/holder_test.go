package db_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// openHolders returns a function that opens a store under a holder on one database of
// the dialect, each closed when the test ends (and closable earlier, as a killed run).
func openHolders(t *testing.T, dialect string) func(holder string) *db.Store {
	opt := db.Options{AuditKey: dbtest.AuditKey, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if dialect == db.DialectPostgres {
		opt.URL = dbtest.PostgresURL(t)
	} else {
		opt.SQLitePath = filepath.Join(t.TempDir(), "wharf.db")
	}
	return func(holder string) *db.Store {
		o := opt
		o.Holder = holder
		s, err := db.Open(context.Background(), o)
		if err != nil {
			t.Fatalf("open store as %q: %v", holder, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// TestReleasePreviousClaims: a run that died holding claims leaves them delivering under
// a long lease; the next run of the same holder hands them back at once, and a live
// process of another holder keeps its claim.
func TestReleasePreviousClaims(t *testing.T) {
	for _, dialect := range dbtest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now()
			open := openHolders(t, dialect)
			first := open("a1")
			fixture(t, first)
			insert(t, first, 3, writer)
			held := must1[[]persistence.Claim](t)(first.ClaimDeliveries(ctx, writer, 2, time.Hour, now))
			if len(held) != 2 || !strings.HasPrefix(held[0].Delivery.ClaimToken, "a1:") {
				t.Fatalf("first run's claims = %+v, want 2 with tokens under a1:", held)
			}
			other := open("b2")
			kept := must1[[]persistence.Claim](t)(other.ClaimDeliveries(ctx, writer, 5, time.Hour, now))
			if len(kept) != 1 {
				t.Fatalf("other process claimed %d deliveries, want 1", len(kept))
			}
			first.Close() // killed: nothing released

			second := open("a1")
			if got := claimAll(t, second, writer, now); len(got) != 0 {
				t.Fatalf("claimable before the release: %+v", got)
			}
			released := must1[[]persistence.Delivery](t)(second.ReleasePreviousClaims(ctx, now))
			if len(released) != 2 {
				t.Fatalf("released %d deliveries, want the first run's 2", len(released))
			}
			for _, d := range released {
				if d.State != persistence.DeliveryRetrying || d.ClaimToken != "" || d.NextAttemptAt == nil || d.NextAttemptAt.After(now) {
					t.Fatalf("released delivery %+v: want retrying, due now, claim cleared", d)
				}
			}
			recorded := false
			for _, e := range history(t, second, held[0].Delivery.MessageID) {
				recorded = recorded || e.DeliveryID != nil && e.FromState == "delivering" && e.ToState == "retrying" && strings.Contains(e.Reason, "previous run")
			}
			if !recorded {
				t.Fatal("the release is not in the delivery's history")
			}
			wantState(t, second, kept[0].Delivery.ID, persistence.DeliveryDelivering)
			again := claimAll(t, second, writer, now)
			if len(again) != 2 || again[0].Delivery.ID != held[0].Delivery.ID || again[1].Delivery.ID != held[1].Delivery.ID {
				t.Fatalf("claimable at once after the release: %+v, want the first run's deliveries", again)
			}
		})
	}
}

func TestReleasePreviousClaimsNeedsHolder(t *testing.T) {
	s := dbtest.SQLite(t)
	if _, err := s.ReleasePreviousClaims(context.Background(), time.Now()); err == nil {
		t.Fatal("a store without a holder released claims")
	}
}

func TestValidHolder(t *testing.T) {
	tests := []struct {
		holder string
		ok     bool
	}{
		{"", true},
		{"0123456789abcdef", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"ABC", false},
		{"a_%", false},
		{"a:b", false},
	}
	for _, tt := range tests {
		if err := db.ValidHolder(tt.holder); (err == nil) != tt.ok {
			t.Errorf("ValidHolder(%q) = %v, want ok=%v", tt.holder, err, tt.ok)
		}
	}
}
