package dispatch_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/dispatch"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// recordingWaker remembers the targets it was asked to wake.
type recordingWaker struct {
	mu   sync.Mutex
	woke []persistence.InstanceName
}

func (w *recordingWaker) Wake(targets []persistence.InstanceName) {
	w.mu.Lock()
	w.woke = append(w.woke, targets...)
	w.mu.Unlock()
}

func (w *recordingWaker) take() []persistence.InstanceName {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.woke
	w.woke = nil
	return out
}

// A bulk action wakes the targets of the deliveries it changed, and only when it changed
// one.
func TestActOnDeliveriesWakesTargets(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		_, blobs := newDispatcher(t, s)
		w := &recordingWaker{}
		d := dispatch.New(s, blobs, w, slog.New(slog.DiscardHandler))
		for _, c := range []persistence.PluginConfig{
			{Name: "in", Type: persistence.PluginFilePoller, Enabled: true},
			{Name: "out", Type: persistence.PluginFileWriter, Enabled: true},
		} {
			if _, err := s.CreatePluginConfig(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateRoute(ctx, persistence.Route{Source: "in", From: "*", To: "*", Target: "out"}); err != nil {
			t.Fatal(err)
		}
		d.RoutesChanged(ctx)
		if _, err := d.Ingest(ctx, []module.Incoming{{Source: "in", From: "acme", To: "local", FileName: "a.edi", Body: strings.NewReader("x")}}); err != nil {
			t.Fatal(err)
		}
		w.take()
		claims, err := s.ClaimDeliveries(ctx, "out", 10, time.Minute, time.Now())
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim = %d %v", len(claims), err)
		}
		c := claims[0].Delivery
		if _, err := s.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "no"}}); err != nil {
			t.Fatal(err)
		}
		res, err := d.ActOnDeliveries(ctx, persistence.ActionSkip, []int64{c.ID + 100}, "user:bob")
		if err != nil || res[0].Err == nil {
			t.Fatalf("skip a missing delivery = %+v, %v", res, err)
		}
		if got := w.take(); len(got) != 0 {
			t.Fatalf("an action that changed nothing woke %v", got)
		}
		if _, err := d.ActOnDeliveries(ctx, persistence.ActionRedeliver, []int64{c.ID}, "user:bob"); err != nil {
			t.Fatal(err)
		}
		if got := w.take(); !slices.Equal(got, []persistence.InstanceName{"out"}) {
			t.Fatalf("redeliver woke %v, want out", got)
		}
	})
}
