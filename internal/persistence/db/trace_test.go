package db_test

import (
	"context"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

func TestTrace(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 4))
		batch := []persistence.NewMessage{
			newMessage(first, true, writer, poster),
			newMessage(first+1, true, writer),
			newMessage(first+2, true, writer),
			newMessage(first+3, false),
		}
		// Two messages came from one event; the second and third share a correlation id.
		batch[1].Message.OriginEventID = batch[0].Message.OriginEventID
		batch[2].Message.CorrelationID = batch[1].Message.CorrelationID
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
		now := time.Now()
		for _, c := range claimAll(t, s, poster, now) {
			complete(t, s, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeRetry,
				NextAttemptAt: now, Reason: "503 from the target", At: now})
		}
		for _, c := range claimAll(t, s, poster, now.Add(time.Second)) {
			complete(t, s, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered, At: now})
		}

		for _, tc := range []struct {
			name string
			q    persistence.TraceQuery
			want []int64
		}{
			{"origin event id", persistence.TraceQuery{OriginEventID: batch[0].Message.OriginEventID}, []int64{first, first + 1}},
			{"correlation id", persistence.TraceQuery{CorrelationID: batch[1].Message.CorrelationID}, []int64{first + 1, first + 2}},
			{"nothing matches", persistence.TraceQuery{CorrelationID: "nothing"}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tr := must1[persistence.Trace](t)(s.Trace(ctx, tc.q))
				if tr.Truncated {
					t.Error("truncated")
				}
				if len(tr.Messages) != len(tc.want) {
					t.Fatalf("%d messages, want %v", len(tr.Messages), tc.want)
				}
				for i, tm := range tr.Messages {
					if tm.ID != tc.want[i] {
						t.Fatalf("message %d is %d, want %d", i, tm.ID, tc.want[i])
					}
					m := must1[persistence.Message](t)(s.GetMessage(ctx, tm.ID))
					if tm.Status != m.Status || tm.OriginalFileName != m.OriginalFileName || !tm.CreatedAt.Equal(m.CreatedAt) || tm.SHA256 != m.SHA256 {
						t.Errorf("message %d traced as %+v, stored as %+v", tm.ID, tm.Message, m)
					}
					ds := must1[[]persistence.Delivery](t)(s.ListDeliveries(ctx, tm.ID))
					if len(tm.Deliveries) != len(ds) {
						t.Fatalf("message %d: %d deliveries traced, %d stored", tm.ID, len(tm.Deliveries), len(ds))
					}
					for j, d := range ds {
						got := tm.Deliveries[j]
						if got.ID != d.ID || got.State != d.State || got.Attempts != d.Attempts || got.Target != d.Target || got.LastError != d.LastError || got.CorrelationID != d.CorrelationID {
							t.Errorf("delivery traced as %+v, stored as %+v", got, d)
						}
					}
					hist := must1[[]persistence.HistoryEntry](t)(s.ListHistory(ctx, tm.ID))
					if len(tm.History) != len(hist) {
						t.Fatalf("message %d: %d history lines traced, %d stored", tm.ID, len(tm.History), len(hist))
					}
					for j, h := range hist {
						got := tm.History[j]
						if got.ID != h.ID || got.Kind != h.Kind || got.ToState != h.ToState || got.Reason != h.Reason || got.Actor != h.Actor ||
							!got.At.Equal(h.At) || (got.DeliveryID == nil) != (h.DeliveryID == nil) {
							t.Errorf("history line traced as %+v, stored as %+v", got, h)
						}
					}
				}
			})
		}

		t.Run("the first message shows its retry", func(t *testing.T) {
			tr := must1[persistence.Trace](t)(s.Trace(ctx, persistence.TraceQuery{OriginEventID: batch[0].Message.OriginEventID}))
			var states []string
			for _, h := range tr.Messages[0].History {
				if h.Kind == persistence.HistoryDeliveryChanged {
					states = append(states, h.FromState+">"+h.ToState)
				}
			}
			want := []string{"queued>delivering", "delivering>retrying", "retrying>delivering", "delivering>delivered"}
			if len(states) != len(want) {
				t.Fatalf("delivery lines %v, want %v", states, want)
			}
			for i := range want {
				if states[i] != want[i] {
					t.Fatalf("delivery lines %v, want %v", states, want)
				}
			}
		})

		t.Run("a bad query is refused", func(t *testing.T) {
			_, err := s.Trace(ctx, persistence.TraceQuery{})
			wantField(t, err, "origin_event_id")
		})
	})
}

func TestTraceIsBounded(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		n := persistence.MaxTraceMessages + 1
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, n))
		batch := make([]persistence.NewMessage, n)
		for i := range batch {
			batch[i] = newMessage(first+int64(i), true, writer)
			batch[i].Message.CorrelationID = "PO-4711"
		}
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
		tr := must1[persistence.Trace](t)(s.Trace(ctx, persistence.TraceQuery{CorrelationID: "PO-4711"}))
		if !tr.Truncated || len(tr.Messages) != persistence.MaxTraceMessages {
			t.Fatalf("truncated %v with %d messages, want true with %d", tr.Truncated, len(tr.Messages), persistence.MaxTraceMessages)
		}
		last := tr.Messages[len(tr.Messages)-1]
		if last.ID != first+int64(n-2) || len(last.Deliveries) != 1 || len(last.History) == 0 {
			t.Fatalf("last message %d with %d deliveries and %d lines, want %d with its delivery and history", last.ID, len(last.Deliveries), len(last.History), first+int64(n-2))
		}
	})
}
