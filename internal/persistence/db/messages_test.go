package db_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

func TestAllocateMessageIDs(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		a := must1[int64](t)(s.AllocateMessageIDs(ctx, 10))
		b := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
		c := must1[int64](t)(s.AllocateMessageIDs(ctx, 5))
		if a < 1 || b != a+10 || c != b+1 {
			t.Fatalf("blocks start at %d, %d, %d; want consecutive blocks", a, b, c)
		}
		if _, err := s.AllocateMessageIDs(ctx, 0); err == nil {
			t.Fatal("AllocateMessageIDs(0) succeeded")
		}
	})
}

func TestInsertMessages(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 4))
		dispatched := newMessage(first, true, writer, poster, writer)
		dispatched.Actor = "poller"
		unrouted := newMessage(first+1, true)
		accepted := newMessage(first+2, false)
		refused := newMessage(first+3, true)
		refused.Message.Refusal = persistence.RefusalRefused
		created := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
		accepted.Message.CreatedAt = created

		out := must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{dispatched, unrouted, accepted, refused}))
		for i, want := range []struct {
			stage  persistence.MessageStage
			status persistence.MessageStatus
		}{
			{persistence.StageDispatched, persistence.StatusInProgress},
			{persistence.StageSettled, persistence.StatusNotRouted},
			{persistence.StageAccepted, persistence.StatusReceived},
			{persistence.StageSettled, persistence.StatusRefused},
		} {
			if out[i].Stage != want.stage || out[i].Status != want.status {
				t.Errorf("message %d returned as %s/%s, want %s/%s", i, out[i].Stage, out[i].Status, want.stage, want.status)
			}
			if got := message(t, s, out[i].ID); !reflect.DeepEqual(got, out[i]) {
				t.Errorf("stored message %+v, returned %+v", got, out[i])
			}
		}
		if got := message(t, s, first+2).CreatedAt; !got.Equal(created.Truncate(time.Microsecond)) {
			t.Errorf("created_at = %v, want %v at microsecond precision", got, created)
		}

		ds := deliveriesOf(t, s, first)
		if len(ds) != 2 || ds[0].Target != writer || ds[1].Target != poster {
			t.Fatalf("deliveries = %+v, want writer and poster once each", ds)
		}
		for _, d := range ds {
			if d.State != persistence.DeliveryQueued || d.Attempts != 0 || d.NextAttemptAt == nil || d.NextWakeupAt == nil ||
				d.NextWakeupAt.Sub(*d.NextAttemptAt) != db.WakeupGrace {
				t.Errorf("new delivery %+v: want queued, due now, next wake-up after the grace", d)
			}
		}
		if ds := deliveriesOf(t, s, first+2); len(ds) != 0 {
			t.Errorf("an accepted message got deliveries: %v", ds)
		}

		h := history(t, s, first)
		if got, want := kinds(h), []string{"received", "dispatched", "status_changed received→in_progress"}; !slices.Equal(got, want) {
			t.Errorf("history = %q, want %q", got, want)
		}
		if h[1].Reason != "to writer, poster" || h[0].Actor != "poller" {
			t.Errorf("dispatched line = %+v, received by %q", h[1], h[0].Actor)
		}
		if got, want := kinds(history(t, s, first+1)), []string{"received", "dispatched", "status_changed received→not_routed"}; !slices.Equal(got, want) {
			t.Errorf("unrouted history = %q, want %q", got, want)
		}
		if got := history(t, s, first+2); len(got) != 1 || got[0].Actor != "system" {
			t.Errorf("accepted history = %+v, want one received line by system", got)
		}

		ps := must1[[]persistence.Payload](t)(s.ListPayloads(ctx, first))
		if len(ps) != 1 || ps[0].MessageID != first || ps[0].Key != dispatched.Payloads[0].Key {
			t.Fatalf("payloads = %+v", ps)
		}
	})
}

func TestInsertMessagesIsAtomic(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		next := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
		_, err := s.InsertMessages(ctx, []persistence.NewMessage{newMessage(next, true, writer), newMessage(m.ID, true, writer)})
		wantErr(t, err, persistence.ErrConflict)
		if !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("conflict %q does not say what exists", err)
		}
		if _, err := s.GetMessage(ctx, next); err == nil {
			t.Fatal("the valid message of a failed batch was written")
		}
		_, err = s.InsertMessages(ctx, []persistence.NewMessage{newMessage(next, false), newMessage(next, false)})
		wantErr(t, err, persistence.ErrConflict)
		checkInvariants(t, s)
	})
}

func TestPayloads(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		receipt := persistence.Payload{MessageID: m.ID, Stage: persistence.PayloadReceipt, Key: "r", Size: 3, SHA256: hashOf("mdn")}
		must(t, s.AddPayload(ctx, receipt))
		wantErr(t, s.AddPayload(ctx, receipt), persistence.ErrConflict)
		receipt.MessageID = m.ID + 1000
		wantErr(t, s.AddPayload(ctx, receipt), persistence.ErrNotFound)

		got := must1[persistence.Payload](t)(s.GetPayload(ctx, m.ID, persistence.PayloadReceipt))
		if got.Size != 3 || got.Key != "r" {
			t.Fatalf("GetPayload = %+v", got)
		}
		_, err := s.GetPayload(ctx, m.ID, persistence.PayloadHeaders)
		wantErr(t, err, persistence.ErrNotFound)
		if ps := must1[[]persistence.Payload](t)(s.ListPayloads(ctx, m.ID)); len(ps) != 2 {
			t.Fatalf("ListPayloads = %+v, want 2", ps)
		}
		for _, list := range []func() error{
			func() error { _, err := s.ListPayloads(ctx, m.ID+1000); return err },
			func() error { _, err := s.ListDeliveries(ctx, m.ID+1000); return err },
			func() error { _, err := s.ListHistory(ctx, m.ID+1000); return err },
			func() error { _, err := s.GetMessage(ctx, m.ID+1000); return err },
			func() error { _, err := s.GetDelivery(ctx, 1<<40); return err },
		} {
			wantErr(t, list(), persistence.ErrNotFound)
		}
	})
}

func TestListMessages(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 5))
		base := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
		var batch []persistence.NewMessage
		for i := range 5 {
			nm := newMessage(first+int64(i), true, writer)
			if i == 4 {
				nm = newMessage(first+int64(i), false)
			}
			nm.Message.CreatedAt = base.Add(time.Duration(i) * time.Hour)
			batch = append(batch, nm)
		}
		batch[1].Message.From, batch[1].Message.To = local, beta
		batch[2].Message.OriginalFileName = "Invoice_100%.XML"
		batch[3].Message.CorrelationID = "PO-4711"
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
		id := func(i int) int64 { return first + int64(i) }

		for _, tc := range []struct {
			name string
			f    persistence.MessageFilter
			want []int64
		}{
			{"all, newest first", persistence.MessageFilter{}, []int64{id(4), id(3), id(2), id(1), id(0)}},
			{"status", persistence.MessageFilter{Status: persistence.StatusReceived}, []int64{id(4)}},
			{"from", persistence.MessageFilter{From: local}, []int64{id(1)}},
			{"to", persistence.MessageFilter{To: beta}, []int64{id(1)}},
			{"source", persistence.MessageFilter{Source: poller}, []int64{id(4), id(3), id(2), id(1), id(0)}},
			{"other source", persistence.MessageFilter{Source: "nothing"}, nil},
			{"since is inclusive", persistence.MessageFilter{Since: base.Add(3 * time.Hour)}, []int64{id(4), id(3)}},
			{"until is exclusive", persistence.MessageFilter{Until: base.Add(time.Hour)}, []int64{id(0)}},
			{"microsecond bounds", persistence.MessageFilter{Since: base.Add(time.Hour - time.Microsecond), Until: base.Add(time.Hour + time.Microsecond)}, []int64{id(1)}},
			{"q in file name, any case", persistence.MessageFilter{Q: "invoice"}, []int64{id(2)}},
			{"q escapes LIKE", persistence.MessageFilter{Q: "100%."}, []int64{id(2)}},
			{"q underscore is literal", persistence.MessageFilter{Q: "order_"}, nil},
			{"q in correlation id", persistence.MessageFilter{Q: "po-47"}, []int64{id(3)}},
			{"q in origin event id", persistence.MessageFilter{Q: "event-" + itoa(id(0))}, []int64{id(0)}},
			{"partner at either end", persistence.MessageFilter{Partner: beta}, []int64{id(1)}},
			{"partner as sender", persistence.MessageFilter{Partner: acme}, []int64{id(4), id(3), id(2), id(0)}},
			{"inbound", persistence.MessageFilter{Direction: persistence.DirectionInbound}, []int64{id(4), id(3), id(2), id(0)}},
			{"outbound", persistence.MessageFilter{Direction: persistence.DirectionOutbound}, []int64{id(1)}},
			{"ids", persistence.MessageFilter{IDs: []int64{id(1), id(3)}}, []int64{id(3), id(1)}},
			{"no ids", persistence.MessageFilter{IDs: []int64{}}, nil},
			{"page", persistence.MessageFilter{ListOptions: persistence.ListOptions{Limit: 2, Offset: 1}}, []int64{id(3), id(2)}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, total := must2(t)(s.ListMessages(ctx, tc.f))
				if g := ids(got, func(m persistence.Message) int64 { return m.ID }); !slices.Equal(g, tc.want) {
					t.Fatalf("ids = %v, want %v", g, tc.want)
				}
				wantTotal := len(tc.want)
				if tc.f.Limit != 0 {
					wantTotal = 5
				}
				if total != wantTotal {
					t.Fatalf("total = %d, want %d", total, wantTotal)
				}
			})
		}
	})
}

func TestFindMessageByOrigin(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		msgs := insert(t, s, 3)
		// A later message of the same source reusing an origin event id is the one found.
		id := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
		again := newMessage(id, false)
		again.Message.OriginEventID = msgs[1].OriginEventID
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{again}))
		tests := []struct {
			name   string
			source persistence.InstanceName
			origin string
			want   int64
		}{
			{"first", poller, msgs[0].OriginEventID, msgs[0].ID},
			{"newest of two", poller, msgs[1].OriginEventID, id},
			{"other source", "elsewhere", msgs[0].OriginEventID, 0},
			{"unknown id", poller, "event-none", 0},
			{"no substring match", poller, msgs[2].OriginEventID[:len(msgs[2].OriginEventID)-1], 0},
		}
		for _, tt := range tests {
			got, err := s.FindMessageByOrigin(ctx, tt.source, tt.origin)
			if tt.want == 0 {
				wantErr(t, err, persistence.ErrNotFound)
				continue
			}
			if err != nil || got.ID != tt.want {
				t.Errorf("%s: got message %d, %v; want %d", tt.name, got.ID, err, tt.want)
			}
		}
	})
}
