package delivery_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
		ctx := context.Background()
		keys := []string{"s3:bucket/wharf/intact", "s3:bucket/wharf/changed"}
		ids := seedKeys(t, s, "sink", keys)
		var mu sync.Mutex
		reads := map[int64]error{}
		sig := &localSignals{}
		e := delivery.NewEngine(s, changedPayloads{}, sig, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 50 * time.Millisecond})
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer e.Stop(ctx)
		err := e.AddTarget("sink", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			r, err := a.Open(ctx)
			if err == nil {
				_, err = io.ReadAll(r)
				r.Close()
			}
			mu.Lock()
			reads[a.Message.ID] = err
			mu.Unlock()
			return delivery.Delivered()
		}), delivery.TargetOptions{MaxConcurrent: 2})
		if err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"sink"})
		waitFor(t, "both attempts", func() bool { mu.Lock(); defer mu.Unlock(); return len(reads) == 2 })
		mu.Lock()
		defer mu.Unlock()
		if err := reads[ids[0]]; err != nil {
			t.Errorf("intact document: %v", err)
		}
		if err := reads[ids[1]]; !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), keys[1]) {
			t.Errorf("changed document: %v, want storage.ErrCorrupt naming %s", err, keys[1])
		}
	})
}

// seedKeys stores one message dispatched to target per key, its document "doc" under
// that key, and returns their ids in order.
func seedKeys(t *testing.T, s *db.Store, target persistence.InstanceName, keys []string) []int64 {
	t.Helper()
	ctx := context.Background()
	for _, name := range []persistence.InstanceName{"src", target} {
		if _, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: name, Type: persistence.PluginHTTPPoster, Enabled: true, Config: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.AllocateMessageIDs(ctx, len(keys))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("doc"))
	digest := hex.EncodeToString(sum[:])
	now := time.Now().UTC()
	var news []persistence.NewMessage
	var ids []int64
	for i, key := range keys {
		id := first + int64(i)
		ids = append(ids, id)
		news = append(news, persistence.NewMessage{
			Message: persistence.Message{ID: id, From: "local", To: "acme", Source: "src", OriginalFileName: "a.edi",
				Size: 3, SHA256: digest, CorrelationID: "c", OriginEventID: "o", CreatedAt: now},
			Payloads: []persistence.Payload{{MessageID: id, Stage: persistence.PayloadUnpacked, Key: key, Size: 3, SHA256: digest, CreatedAt: now}},
			Dispatch: true,
			Targets:  []persistence.InstanceName{target},
		})
	}
	if _, err := s.InsertMessages(ctx, news); err != nil {
		t.Fatal(err)
	}
	return ids
}
