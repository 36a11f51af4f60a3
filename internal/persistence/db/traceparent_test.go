package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// A message's trace parent is stored at insert and handed to the worker that claims a
// delivery of it; what is not a traceparent is refused naming the field.
func TestTraceParentTravelsWithTheClaim(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 2))
		traced, untraced := newMessage(first, true, writer), newMessage(first+1, true, writer)
		traced.Message.TraceParent = tp
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{traced, untraced}))
		if got := message(t, s, first).TraceParent; got != tp {
			t.Fatalf("stored trace parent %q, want %q", got, tp)
		}
		claims := must1[[]persistence.Claim](t)(s.ClaimDeliveries(ctx, writer, 10, time.Minute, time.Now()))
		got := map[int64]string{}
		for _, c := range claims {
			got[c.Message.ID] = c.Message.TraceParent
		}
		if len(got) != 2 || got[first] != tp || got[first+1] != "" {
			t.Fatalf("claims carry trace parents %v, want %q for %d and none for %d", got, tp, first, first+1)
		}

		for _, bad := range []string{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "00-4bf9-00f0-01", tp + "x", "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
			id := must1[int64](t)(s.AllocateMessageIDs(ctx, 1))
			nm := newMessage(id, true, writer)
			nm.Message.TraceParent = bad
			_, err := s.InsertMessages(ctx, []persistence.NewMessage{nm})
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || !strings.HasSuffix(fe.Field, "trace_parent") {
				t.Errorf("trace parent %q: error %v, want one naming trace_parent", bad, err)
			}
		}
	})
}
