package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// insertSessions stores n messages to writer spread round-robin over sessions ordered
// sessions (none: unordered).
func insertSessions(b testing.TB, s *db.Store, n, sessions int) {
	ctx := context.Background()
	first := must1[int64](b)(s.AllocateMessageIDs(ctx, n))
	batch := make([]persistence.NewMessage, n)
	for i := range batch {
		batch[i] = newMessage(first+int64(i), true, writer)
		if sessions > 0 {
			batch[i].Sessions = map[persistence.InstanceName]persistence.DeliverySession{writer: {Key: fmt.Sprintf("writer|s%03d", i%sessions)}}
		}
	}
	must1[[]persistence.Message](b)(s.InsertMessages(ctx, batch))
}

// BenchmarkBacklog is a worker of 16 slots at a backlog of 2000 deliveries: each
// operation claims up to 16, completes them and dispatches as many new ones, unordered
// and over 100 ordered sessions.
func BenchmarkBacklog(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		for _, sessions := range []int{0, 100} {
			b.Run(fmt.Sprintf("%s/sessions=%d", d, sessions), func(b *testing.B) {
				ctx := context.Background()
				s := dbtest.Open(b, d)
				fixture(b, s)
				insertSessions(b, s, 2000, sessions)
				b.ResetTimer()
				for range b.N {
					cs, err := s.ClaimDeliveries(ctx, writer, 16, time.Minute, time.Now())
					if err != nil || len(cs) == 0 {
						b.Fatalf("claimed %d: %v", len(cs), err)
					}
					done := make([]persistence.Completion, len(cs))
					for i, c := range cs {
						done[i] = persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered}
					}
					must1[[]error](b)(s.CompleteDeliveries(ctx, done))
					insertSessions(b, s, len(cs), sessions)
				}
				reportMessages(b, 16)
			})
		}
	}
}
