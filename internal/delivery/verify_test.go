package delivery_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/storage"
)

// changedPayloads serves "doc" for every key but those ending in "changed", which read
// as other bytes of the same length, as a blob changed in the bucket would.
type changedPayloads struct{ memPayloads }

func (changedPayloads) Open(_ context.Context, key string) (io.ReadCloser, error) {
	if strings.HasSuffix(key, "changed") {
		return io.NopCloser(strings.NewReader("dog")), nil
	}
	return io.NopCloser(bytes.NewReader([]byte("doc"))), nil
}

// An attempt reading a document kept on S3 gets an error naming the blob when the bytes
// are not those recorded with it, and the document itself when they are.
func TestAttemptOpenChecksS3Documents(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		keys := []string{"s3:bucket/wharf/intact", "s3:bucket/wharf/changed"}
		msgs := seedDocs(t, s, "sink", keys, nil, time.Now().UTC())
		var mu sync.Mutex
		reads := map[int64]error{}
		runSink(t, s, deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			r, err := a.Open(ctx)
			if err == nil {
				_, err = io.ReadAll(r)
				r.Close()
			}
			mu.Lock()
			reads[a.Message.ID] = err
			mu.Unlock()
			return delivery.Delivered()
		}), 2)
		waitFor(t, "both attempts", func() bool { mu.Lock(); defer mu.Unlock(); return len(reads) == 2 })
		mu.Lock()
		defer mu.Unlock()
		if err := reads[msgs[0].ID]; err != nil {
			t.Errorf("intact document: %v", err)
		}
		if err := reads[msgs[1].ID]; !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), keys[1]) {
			t.Errorf("changed document: %v, want storage.ErrCorrupt naming %s", err, keys[1])
		}
	})
}

// A target that reads the document only up to its recorded size and reports the broken
// read as its own failure (an HTTP post whose body broke off) does not hide the cause:
// the delivery fails, at once, naming the changed blob.
func TestCorruptDocumentFailsTheDeliveryNamingIt(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		keys := []string{"s3:bucket/wharf/changed"}
		msgs := seedDocs(t, s, "sink", keys, nil, time.Now().UTC())
		runSink(t, s, deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			r, err := a.Open(ctx)
			if err != nil {
				return delivery.Transient(delivery.ClassTransport, err)
			}
			defer r.Close()
			if _, err := io.CopyN(io.Discard, r, a.Message.Size); err != nil {
				return delivery.Transient(delivery.ClassTransport, errors.New("the request body broke off"))
			}
			return delivery.Delivered()
		}), 1)
		waitFor(t, "the delivery to fail", func() bool { return deliveryOf(t, s, msgs[0].ID).State == persistence.DeliveryFailed })
		if d := deliveryOf(t, s, msgs[0].ID); !strings.Contains(d.LastError, keys[0]) || d.Attempts != 1 {
			t.Errorf("delivery after %d attempts: %q, want one attempt and an error naming %s", d.Attempts, d.LastError, keys[0])
		}
	})
}

// runSink delivers to target "sink" through d, documents read from changedPayloads,
// until the test ends.
func runSink(t *testing.T, s *db.Store, d delivery.Deliverer, maxConcurrent int) {
	t.Helper()
	ctx := context.Background()
	sig := &localSignals{}
	e := delivery.NewEngine(s, changedPayloads{}, sig, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 50 * time.Millisecond})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(ctx) })
	if err := e.AddTarget("sink", d, delivery.TargetOptions{MaxConcurrent: maxConcurrent}); err != nil {
		t.Fatal(err)
	}
	sig.Wake([]persistence.InstanceName{"sink"})
}
