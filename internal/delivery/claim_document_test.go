package delivery_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// lookupCounter is the store with its document lookups counted.
type lookupCounter struct {
	*db.Store
	lookups atomic.Int32
}

func (c *lookupCounter) GetPayload(ctx context.Context, messageID int64, stage persistence.PayloadStage) (persistence.Payload, error) {
	c.lookups.Add(1)
	return c.Store.GetPayload(ctx, messageID, stage)
}

// keyRecorder is the payload store with the keys attempts opened recorded.
type keyRecorder struct {
	memPayloads
	mu     sync.Mutex
	opened []string
}

func (k *keyRecorder) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	k.mu.Lock()
	k.opened = append(k.opened, key)
	k.mu.Unlock()
	return k.memPayloads.Open(ctx, key)
}

// TestAttemptOpensTheClaimedDocument holds that an attempt opens the document its claim
// carries, without a lookup of its own: a lookup per attempt is a read transaction on
// every claimer's critical path.
func TestAttemptOpensTheClaimedDocument(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		const n = 20
		msgs := seed(t, s, "sink", n)
		store := &lookupCounter{Store: s}
		blobs := &keyRecorder{}
		sig := &localSignals{}
		e := delivery.NewEngine(store, blobs, sig, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 50 * time.Millisecond})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := e.AddTarget("sink", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			r, err := a.Open(ctx)
			if err != nil {
				return delivery.Permanent(delivery.ClassInternal, err)
			}
			r.Close()
			return delivery.Delivered()
		}), delivery.TargetOptions{MaxConcurrent: 4})
		if err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"sink"})
		waitFor(t, "all delivered", func() bool {
			_, total, _ := s.ListMessages(context.Background(), persistence.MessageFilter{Status: persistence.StatusDelivered, ListOptions: persistence.ListOptions{Limit: 1}})
			return total == len(msgs)
		})
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := store.lookups.Load(); got != 0 {
			t.Errorf("attempts looked their documents up %d times; the claims carry them", got)
		}
		if len(blobs.opened) != n {
			t.Fatalf("attempts opened %d documents, want %d", len(blobs.opened), n)
		}
		for _, k := range blobs.opened {
			if k != "k" {
				t.Errorf("an attempt opened %q, not its message's document", k)
			}
		}
	})
}
