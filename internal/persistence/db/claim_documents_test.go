package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// TestClaimCarriesDocument holds that each claim carries its own message's unpacked
// stage, read in the claim, and a message without one leaves the lookup to the worker.
func TestClaimCarriesDocument(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		msgs := insert(t, s, 5, writer)
		bare := newMessage(must1[int64](t)(s.AllocateMessageIDs(ctx, 1)), true, writer)
		bare.Payloads = nil
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{bare}))

		claims := must1[[]persistence.Claim](t)(s.ClaimDeliveries(ctx, writer, 10, time.Minute, time.Now()))
		if len(claims) != len(msgs)+1 {
			t.Fatalf("claimed %d, want %d", len(claims), len(msgs)+1)
		}
		for _, c := range claims {
			d := c.Document
			if c.Message.ID == bare.Message.ID {
				if d.Key != "" {
					t.Errorf("the message without a document claims %+v", d)
				}
				continue
			}
			want := must1[persistence.Payload](t)(s.GetPayload(ctx, c.Message.ID, persistence.PayloadUnpacked))
			if d.Key != fmt.Sprintf("messages/%d/unpacked", c.Message.ID) || d != want {
				t.Errorf("claim of message %d carries %+v, want %+v", c.Message.ID, d, want)
			}
		}
	})
}
