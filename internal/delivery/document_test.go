package delivery_test

import (
	"bytes"
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

// countingStore counts the payload reads the engine asks of the store.
type countingStore struct {
	*db.Store
	reads atomic.Int64
}

func (c *countingStore) GetPayload(ctx context.Context, messageID int64, stage persistence.PayloadStage) (persistence.Payload, error) {
	c.reads.Add(1)
	return c.Store.GetPayload(ctx, messageID, stage)
}

// openedPayloads records the keys opened.
type openedPayloads struct {
	memPayloads
	mu   sync.Mutex
	keys []string
}

func (o *openedPayloads) Open(_ context.Context, key string) (io.ReadCloser, error) {
	o.mu.Lock()
	o.keys = append(o.keys, key)
	o.mu.Unlock()
	return io.NopCloser(bytes.NewReader([]byte("doc"))), nil
}

// TestAttemptOpensTheDocumentOfItsClaim holds that a worker opens the document under the
// key its claim carries, without a read of its own per attempt.
func TestAttemptOpensTheDocumentOfItsClaim(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		msgs := seed(t, s, "sink", 20)
		store := &countingStore{Store: s}
		payloads := &openedPayloads{}
		sig := &localSignals{}
		e := delivery.NewEngine(store, payloads, sig, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 50 * time.Millisecond})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := e.AddTarget("sink", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			r, err := a.Open(ctx)
			if err != nil {
				return delivery.Transient(delivery.ClassTransport, err)
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
		if n := store.reads.Load(); n != 0 {
			t.Errorf("the engine read payload rows %d times; the claims carry them", n)
		}
		payloads.mu.Lock()
		defer payloads.mu.Unlock()
		if len(payloads.keys) != len(msgs) {
			t.Fatalf("opened %d documents, want %d", len(payloads.keys), len(msgs))
		}
		for _, k := range payloads.keys {
			if k != "k" {
				t.Errorf("opened %q, want the document's key k", k)
			}
		}
	})
}
