package delivery_test

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
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

// checkOpened holds that n attempts opened the document key their claims carried and
// looked none up: a lookup per attempt is a read transaction on every claimer's
// critical path.
func (k *keyRecorder) checkOpened(t *testing.T, store *lookupCounter, n int, key string) {
	t.Helper()
	if got := store.lookups.Load(); got != 0 {
		t.Errorf("attempts looked their documents up %d times; the claims carry them", got)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.opened) != n {
		t.Fatalf("attempts opened %d documents, want %d", len(k.opened), n)
	}
	for _, got := range k.opened {
		if got != key {
			t.Errorf("an attempt opened %q, not its message's document %q", got, key)
		}
	}
}
