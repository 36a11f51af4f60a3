package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// A message is reported once when its status becomes error, with the delivery that failed
// it, and not again when a second delivery of it fails; a message no route matched and one
// its source refused (with the reason) are reported too.
func TestOnMessageAlertOncePerEvent(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		var mu sync.Mutex
		var got []db.MessageAlert
		s.OnMessageAlert(func(f db.MessageAlert) {
			mu.Lock()
			got = append(got, f)
			mu.Unlock()
		})
		now := time.Now()
		msgs := insert(t, s, 2, writer, poster)
		for _, target := range []persistence.InstanceName{writer, poster} {
			cs := claimAll(t, s, target, now)
			var comps []persistence.Completion
			for i, c := range cs {
				kind := persistence.OutcomeFailed
				if i == 1 && target == writer {
					kind = persistence.OutcomeDelivered
				}
				comps = append(comps, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: kind, Reason: "HTTP 403 Forbidden", At: now})
			}
			for i, err := range complete(t, s, comps...) {
				if err != nil {
					t.Fatalf("completion %d: %v", i, err)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("reported %d failures, want 2 (one per message): %+v", len(got), got)
		}
		byID := map[int64]db.MessageAlert{}
		for _, f := range got {
			byID[f.Message.ID] = f
		}
		if f := byID[msgs[0].ID]; f.Target != writer || f.Reason != "HTTP 403 Forbidden" || f.Message.Status != persistence.StatusError {
			t.Fatalf("first message reported as %+v", f)
		}
		if f := byID[msgs[1].ID]; f.Target != poster {
			t.Fatalf("second message reported as %+v, want its poster delivery", f)
		}
		got = nil
		mu.Unlock()
		lone := insert(t, s, 1)
		mu.Lock()
		if len(got) != 1 || got[0].Message.ID != lone[0].ID || got[0].Message.Status != persistence.StatusNotRouted {
			t.Fatalf("a message no route matched reported as %+v", got)
		}
		got = nil
		mu.Unlock()
		id := must1[int64](t)(s.AllocateMessageIDs(t.Context(), 1))
		refused := newMessage(id, true)
		refused.Message.Refusal, refused.RefusalReason = persistence.RefusalRefused, "the signature could not be verified"
		must1[[]persistence.Message](t)(s.InsertMessages(t.Context(), []persistence.NewMessage{refused}))
		mu.Lock()
		if len(got) != 1 || got[0].Message.ID != id || got[0].Message.Status != persistence.StatusRefused ||
			got[0].Reason != "the signature could not be verified" {
			t.Fatalf("a refused message reported as %+v", got)
		}
		got = nil
		mu.Unlock()
		// A redelivery takes the first message out of error: reported, with the status it
		// left, so its alert resolves.
		ds, err := s.ListDeliveries(context.Background(), msgs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.State == persistence.DeliveryFailed {
				if _, err := s.Redeliver(context.Background(), d.ID, persistence.ResendSame, "user:bob"); err != nil {
					t.Fatal(err)
				}
			}
		}
		mu.Lock()
		if len(got) != 1 || got[0].Message.ID != msgs[0].ID || got[0].Previous != persistence.StatusError ||
			got[0].Message.Status == persistence.StatusError || got[0].Target != "" {
			t.Fatalf("a redelivered failed message reported as %+v", got)
		}
	})
}
