package db_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// recordingEraser is a module eraser that records the ids it was asked to erase, and can
// fail to show the erasure is one transaction.
type recordingEraser struct {
	mu   sync.Mutex
	ids  []int64
	fail bool
}

func (e *recordingEraser) EraseMessages(_ context.Context, _ module.Tx, ids []int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail {
		return errors.New("module refused")
	}
	e.ids = append(e.ids, ids...)
	return nil
}

// settledMessages inserts n messages from acme with metadata, delivered to writer, and
// one more whose delivery is still being attempted.
func settledMessages(t *testing.T, s *db.Store, n int) (done []persistence.Message, inFlight persistence.Message) {
	t.Helper()
	ctx := context.Background()
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, n+1))
	batch := make([]persistence.NewMessage, n+1)
	for i := range batch {
		batch[i] = newMessage(first+int64(i), true, writer)
		batch[i].Message.Metadata = map[string]string{"subject": "secret order"}
	}
	msgs := must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
	claims := claimAll(t, s, writer, time.Now())
	var cs []persistence.Completion
	for _, c := range claims[:n] {
		cs = append(cs, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered, At: time.Now()})
	}
	for _, err := range complete(t, s, cs...) {
		must(t, err)
	}
	return msgs[:n], msgs[n]
}

func TestEraseMessages(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		eraser := &recordingEraser{}
		s.SetMessageErasers([]module.MessageEraser{eraser})
		done, busy := settledMessages(t, s, 3)
		// The in-house system's report quotes the document: its words go with it.
		ds := must1[[]persistence.Delivery](t)(s.ListDeliveries(ctx, done[0].ID))
		must1[persistence.Delivery](t)(s.SettleReceipt(ctx, persistence.DownstreamReport{DeliveryID: ds[0].ID,
			Status: "received", Reason: "secret order 4711 queued", Reporter: "callback:" + string(writer), ReportedAt: time.Now()}))
		f := persistence.ErasureFilter{Party: acme, From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}
		before := must1[[]persistence.StatusCount](t)(s.CountMessagesByStatus(ctx))

		got := must1[persistence.ErasureCount](t)(s.CountErasable(ctx, f))
		if want := (persistence.ErasureCount{Erasable: 3, InFlight: 1}); got != want {
			t.Fatalf("count before = %+v, want %+v", got, want)
		}
		if n := must1[persistence.ErasureCount](t)(s.CountErasable(ctx, persistence.ErasureFilter{Party: beta, From: f.From, To: f.To})); n != (persistence.ErasureCount{}) {
			t.Fatalf("count of beta = %+v, want none", n)
		}
		ids := must1[[]int64](t)(s.ErasableIDs(ctx, f, 0, 2))
		if want := []int64{done[0].ID, done[1].ID}; !slices.Equal(ids, want) {
			t.Fatalf("first batch = %v, want %v", ids, want)
		}
		res := must1[persistence.ErasureResult](t)(s.EraseMessages(ctx, append(ids, busy.ID), "user:ann", "acme"))
		if res.Erased != 2 || res.InFlight != 1 {
			t.Fatalf("first batch erased %+v, want 2 erased and 1 in flight", res)
		}
		ids = must1[[]int64](t)(s.ErasableIDs(ctx, f, ids[len(ids)-1], 2))
		if want := []int64{done[2].ID}; !slices.Equal(ids, want) {
			t.Fatalf("second batch = %v, want %v", ids, want)
		}
		must1[persistence.ErasureResult](t)(s.EraseMessages(ctx, ids, "user:ann", "acme"))
		if want := []int64{done[0].ID, done[1].ID, done[2].ID}; !slices.Equal(eraser.ids, want) {
			t.Fatalf("module eraser saw %v, want %v", eraser.ids, want)
		}

		for _, m := range done {
			got := message(t, s, m.ID)
			if got.OriginalFileName != persistence.ErasedFileName || got.Metadata != nil || got.ErasedAt == nil ||
				got.Status != persistence.StatusDelivered || got.Size != m.Size || got.From != m.From {
				t.Fatalf("erased message = %+v", got)
			}
			if h := history(t, s, m.ID); h[len(h)-1].Kind != persistence.HistoryErased || h[len(h)-1].Actor != "user:ann" {
				t.Fatalf("history ends with %+v, want an erased line by user:ann", h[len(h)-1])
			}
			for _, h := range history(t, s, m.ID) {
				if strings.Contains(h.Reason, "secret order") {
					t.Fatalf("history line %s still quotes the receiving side: %q", h.Kind, h.Reason)
				}
				if strings.Contains(h.Reason, string(m.OriginalFileName)) {
					t.Fatalf("history line %s still names the file: %q", h.Kind, h.Reason)
				}
			}
		}
		if got := message(t, s, busy.ID); got.ErasedAt != nil || got.Metadata == nil {
			t.Fatalf("message in flight was erased: %+v", got)
		}
		after := must1[[]persistence.StatusCount](t)(s.CountMessagesByStatus(ctx))
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("counts by status changed: %v, then %v", before, after)
		}
		if got := must1[persistence.ErasureCount](t)(s.CountErasable(ctx, f)); got != (persistence.ErasureCount{InFlight: 1, AlreadyErased: 3}) {
			t.Fatalf("count after = %+v", got)
		}

		// The payload records stay until their blobs are deleted.
		left := must1[[]persistence.Payload](t)(s.ErasedPayloads(ctx, 100))
		if len(left) != 3 {
			t.Fatalf("payloads of erased messages = %d, want 3", len(left))
		}
		must(t, s.DeletePayloadRecords(ctx, left))
		if left := must1[[]persistence.Payload](t)(s.ErasedPayloads(ctx, 100)); len(left) != 0 {
			t.Fatalf("payloads left after deletion: %v", left)
		}
		if ps := must1[[]persistence.Payload](t)(s.ListPayloads(ctx, busy.ID)); len(ps) != 1 {
			t.Fatalf("payloads of the message in flight = %v", ps)
		}
		must(t, s.ReclaimFreedSpace(ctx))

		events, _ := must2audit(t, s)
		n := 0
		for _, e := range events {
			if e.Action == "erase" && e.Kind == "message" {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("erase audit events = %d, want one per batch (2)", n)
		}
		checkInvariants(t, s)
	})
}

func TestEraseMessageRefusals(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		done, busy := settledMessages(t, s, 1)
		m := done[0]
		must(t, s.EraseMessage(ctx, m.ID, "user:ann"))
		d := deliveriesOf(t, s, m.ID)[0]

		tests := []struct {
			name string
			err  error
			want error
		}{
			{"erase again", s.EraseMessage(ctx, m.ID, "user:ann"), persistence.ErrErased},
			{"erase in flight", s.EraseMessage(ctx, busy.ID, "user:ann"), persistence.ErrConflict},
			{"erase missing", s.EraseMessage(ctx, 999999, "user:ann"), persistence.ErrNotFound},
			{"redispatch", second(s.Redispatch(ctx, m.ID, []persistence.InstanceName{writer}, nil, nil, "user:ann")), persistence.ErrErased},
			{"redeliver", second(s.Redeliver(ctx, d.ID, persistence.ResendSame, "user:ann")), persistence.ErrErased},
			{"bulk redeliver", actionErr(s.ActOnDeliveries(ctx, persistence.ActionRedeliver, []int64{d.ID}, "user:ann")), persistence.ErrErased},
			{"filter without party", second(s.CountErasable(ctx, persistence.ErasureFilter{From: time.Now(), To: time.Now().Add(time.Hour)})), nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if tc.want == nil {
					wantField(t, tc.err, "party")
					return
				}
				wantErr(t, tc.err, tc.want)
			})
		}
		if got := deliveriesOf(t, s, m.ID)[0]; got.State != persistence.DeliveryDelivered {
			t.Fatalf("a refused redelivery changed the delivery: %+v", got)
		}
	})
}

func TestEraseRollsBackWhenAModuleFails(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		s.SetMessageErasers([]module.MessageEraser{&recordingEraser{fail: true}})
		done, _ := settledMessages(t, s, 1)
		if err := s.EraseMessage(ctx, done[0].ID, "user:ann"); err == nil {
			t.Fatal("erasure committed although a module failed")
		}
		if got := message(t, s, done[0].ID); got.ErasedAt != nil || got.OriginalFileName == persistence.ErasedFileName {
			t.Fatalf("a failed erasure left %+v", got)
		}
	})
}

func second[T any](_ T, err error) error { return err }

// actionErr is the error of the one result of a delivery action.
func actionErr(res []persistence.DeliveryActionResult, err error) error {
	if err != nil {
		return err
	}
	return res[0].Err
}

// must2audit lists every audit event.
func must2audit(t *testing.T, s *db.Store) ([]audit.Event, int) {
	t.Helper()
	events, n, err := s.ListAudit(context.Background(), persistence.AuditFilter{ListOptions: persistence.ListOptions{Limit: 1000}})
	must(t, err)
	return events, n
}
