package db_test

import (
	"context"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// TestFileToFileRoundTrips holds the work the store does for a batch of file → file
// messages to a bound on both dialects: the batch ingested, claimed in the chunks a
// worker of the default 16 slots takes, the outcomes recorded in small batches, with
// each claim carrying the document the worker opens (no read of its own). On PostgreSQL
// every statement, begin and commit is a round trip, and the machine's CPU goes to
// them on both sides; a change that adds a statement per message shows here.
func TestFileToFileRoundTrips(t *testing.T) {
	// The most statements and transactions (counted twice: begin and commit) per message.
	bound := map[string]float64{db.DialectPostgres: 1.75, db.DialectSQLite: 3}
	forEach(t, func(t *testing.T, s *db.Store) {
		const n, claimChunk, outcomeBatch = 64, 8, 4
		ctx := context.Background()
		now := time.Now()
		tx0, st0 := db.Counts(s)
		insert(t, s, n, writer)
		for done := 0; done < n; {
			claims, err := s.ClaimDeliveries(ctx, writer, claimChunk, time.Minute, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(claims) == 0 {
				t.Fatalf("nothing to claim after %d of %d", done, n)
			}
			for _, c := range claims {
				if c.Document.Key == "" || c.Document.MessageID != c.Message.ID || c.Document.Stage != persistence.PayloadUnpacked {
					t.Fatalf("claim of delivery %d carries document %+v", c.Delivery.ID, c.Document)
				}
			}
			for i := 0; i < len(claims); i += outcomeBatch {
				var cs []persistence.Completion
				for _, c := range claims[i:min(i+outcomeBatch, len(claims))] {
					cs = append(cs, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken,
						Kind: persistence.OutcomeDelivered})
				}
				for _, err := range complete(t, s, cs...) {
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			done += len(claims)
		}
		tx1, st1 := db.Counts(s)
		per := float64(2*(tx1-tx0)+st1-st0) / n
		t.Logf("%s: %d transactions, %d statements for %d messages: %.2f per message", s.Dialect(), tx1-tx0, st1-st0, n, per)
		if per > bound[s.Dialect()] {
			t.Errorf("%s: %.2f statements and transactions per message, want at most %.2f", s.Dialect(), per, bound[s.Dialect()])
		}
		checkInvariants(t, s)
	})
}
