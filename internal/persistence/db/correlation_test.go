package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

func TestInsertRefusesBadCorrelation(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		for _, tc := range []struct {
			name, corr, origin, field string
		}{
			{"empty correlation id", "", "event", "messages[0].correlation_id"},
			{"empty origin event id", "corr", "", "messages[0].origin_event_id"},
			{"control character", "corr\x1b[2J", "event", "messages[0].correlation_id"},
			{"unprintable", "corr", "event\u200b", "messages[0].origin_event_id"},
			{"too long", strings.Repeat("c", persistence.MaxReferenceLen+1), "event", "messages[0].correlation_id"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				id := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
				nm := newMessage(id, true, writer)
				nm.Message.CorrelationID, nm.Message.OriginEventID = tc.corr, tc.origin
				_, err := s.InsertMessages(ctx, []persistence.NewMessage{nm})
				wantField(t, err, tc.field)
				if _, err := s.GetMessage(ctx, id); err == nil {
					t.Fatal("the refused message was stored")
				}
			})
		}
	})
}

// The schema refuses what the store refuses, whatever writes the row.
func TestSchemaRefusesEmptyCorrelation(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		for _, q := range []string{
			`UPDATE messages SET correlation_id = '' WHERE id = ?`,
			`UPDATE messages SET origin_event_id = '' WHERE id = ?`,
			`UPDATE deliveries SET correlation_id = '' WHERE message_id = ?`,
			`UPDATE deliveries SET origin_event_id = '' WHERE message_id = ?`,
		} {
			if err := db.ExecRaw(ctx, s, q, m.ID); err == nil {
				t.Errorf("%s: no error", q)
			}
		}
	})
}

// Deliveries and history lines carry their message's ids, from every path that makes
// them: the insert, a redispatch adding a delivery, an outcome, a redelivery.
func TestDeliveriesAndHistoryInheritCorrelation(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		must1[[]persistence.Delivery](t)(s.Redispatch(ctx, m.ID, []persistence.InstanceName{writer, poster}, nil, nil, "user:alice"))
		now := time.Now()
		for _, c := range claimAll(t, s, poster, now) {
			complete(t, s, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken,
				Kind: persistence.OutcomeFailed, Reason: "refused", At: now})
			must1[persistence.Delivery](t)(s.Redeliver(ctx, c.Delivery.ID, persistence.ResendSame, "user:alice"))
		}

		ds := must1[[]persistence.Delivery](t)(s.ListDeliveries(ctx, m.ID))
		if len(ds) != 2 {
			t.Fatalf("%d deliveries, want 2", len(ds))
		}
		for _, d := range ds {
			if d.CorrelationID != m.CorrelationID || d.OriginEventID != m.OriginEventID {
				t.Errorf("delivery %d to %s carries (%q, %q), want (%q, %q)", d.ID, d.Target, d.CorrelationID, d.OriginEventID, m.CorrelationID, m.OriginEventID)
			}
		}
		hist := must1[[]persistence.HistoryEntry](t)(s.ListHistory(ctx, m.ID))
		if len(hist) < 6 {
			t.Fatalf("%d history lines, want the insert's, the redispatch's and the outcomes'", len(hist))
		}
		for _, h := range hist {
			if h.CorrelationID != m.CorrelationID || h.OriginEventID != m.OriginEventID {
				t.Errorf("history line %d (%s) carries (%q, %q), want (%q, %q)", h.ID, h.Kind, h.CorrelationID, h.OriginEventID, m.CorrelationID, m.OriginEventID)
			}
		}
	})
}
