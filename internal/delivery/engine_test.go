package delivery_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// localSignals delivers wake-ups in-process.
type localSignals struct {
	mu  sync.Mutex
	fns map[persistence.InstanceName][]func()
}

func (s *localSignals) Wake(ts []persistence.InstanceName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		for _, fn := range s.fns[t] {
			fn()
		}
	}
}

func (s *localSignals) OnWake(t persistence.InstanceName, fn func()) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fns == nil {
		s.fns = map[persistence.InstanceName][]func(){}
	}
	s.fns[t] = append(s.fns[t], fn)
	return func() {}, nil
}

type memPayloads struct{ synced *[]string }

func (m memPayloads) Sync(_ context.Context, keys []string) error {
	if m.synced != nil {
		*m.synced = append(*m.synced, keys...)
	}
	return nil
}

func (memPayloads) Open(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader([]byte("doc"))), nil
}

// seed stores n messages dispatched to target.
func seed(t *testing.T, s *db.Store, target persistence.InstanceName, n int) []persistence.Message {
	t.Helper()
	return seedWithPolicy(t, s, target, n, nil)
}

// seedWithPolicy stores n messages dispatched to target by a route whose retry override
// is policy (nil: the target's).
func seedWithPolicy(t *testing.T, s *db.Store, target persistence.InstanceName, n int, policy *delivery.RetryPolicy) []persistence.Message {
	t.Helper()
	return seedAt(t, s, target, n, policy, time.Now().UTC())
}

// seedAt is seedWithPolicy with messages created at now: a test whose engine runs on a
// clock of its own creates them on it, as history is never older than its message.
func seedAt(t *testing.T, s *db.Store, target persistence.InstanceName, n int, policy *delivery.RetryPolicy, now time.Time) []persistence.Message {
	t.Helper()
	return seedDocs(t, s, target, slices.Repeat([]string{"k"}, n), policy, now)
}

// seedDocs is seedAt with one message per key, its document "doc" stored under the key.
func seedDocs(t *testing.T, s *db.Store, target persistence.InstanceName, keys []string, policy *delivery.RetryPolicy, now time.Time) []persistence.Message {
	t.Helper()
	n := len(keys)
	ctx := context.Background()
	for _, name := range []persistence.InstanceName{"src", target} {
		_, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: name, Type: persistence.PluginHTTPPoster, Enabled: true, Config: []byte(`{}`)})
		if err != nil && !errors.Is(err, persistence.ErrConflict) {
			t.Fatal(err)
		}
	}
	first, err := s.AllocateMessageIDs(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("doc"))
	digest := hex.EncodeToString(sum[:])
	var news []persistence.NewMessage
	for i := 0; i < n; i++ {
		id := first + int64(i)
		news = append(news, persistence.NewMessage{
			Message: persistence.Message{ID: id, From: "local", To: "acme", Source: "src", OriginalFileName: "a.edi",
				Size: 3, SHA256: digest, CorrelationID: "c", OriginEventID: "o", CreatedAt: now},
			Payloads: []persistence.Payload{{MessageID: id, Stage: persistence.PayloadUnpacked, Key: keys[i], Size: 3, SHA256: digest, CreatedAt: now}},
			Dispatch: true,
			Targets:  []persistence.InstanceName{target},
			Retry:    map[persistence.InstanceName]*delivery.RetryPolicy{target: policy},
		})
	}
	msgs, err := s.InsertMessages(ctx, news)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

type deliverFunc func(ctx context.Context, a delivery.Attempt) delivery.Result

func (f deliverFunc) Deliver(ctx context.Context, a delivery.Attempt) delivery.Result {
	return f(ctx, a)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

func deliveryOf(t *testing.T, s *db.Store, msgID int64) persistence.Delivery {
	t.Helper()
	ds, err := s.ListDeliveries(context.Background(), msgID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries of %d: %v %v", msgID, ds, err)
	}
	return ds[0]
}

func newEngine(s *db.Store, sig *localSignals) *delivery.Engine {
	log := slog.New(slog.DiscardHandler)
	return delivery.NewEngine(s, memPayloads{}, sig, log, delivery.Config{PollInterval: 50 * time.Millisecond})
}

// TestEngineRecordsTargetPayloads holds that stages a target stored with its result (a
// receipt) are flushed and recorded with the outcome.
func TestEngineRecordsTargetPayloads(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		msgs := seed(t, s, "sink", 3)
		var synced []string
		sig := &localSignals{}
		e := delivery.NewEngine(s, memPayloads{synced: &synced}, sig, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 50 * time.Millisecond})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := e.AddTarget("sink", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			r := delivery.Delivered()
			r.Payloads = []persistence.Payload{{MessageID: a.Message.ID, Stage: persistence.PayloadReceipt,
				Key: fmt.Sprintf("receipt-%d", a.Message.ID), Size: 1, SHA256: strings.Repeat("ab", 32)}}
			return r
		}), delivery.TargetOptions{MaxConcurrent: 2})
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
		for _, m := range msgs {
			p, err := s.GetPayload(context.Background(), m.ID, persistence.PayloadReceipt)
			if err != nil || p.Key != fmt.Sprintf("receipt-%d", m.ID) {
				t.Errorf("receipt of message %d: %+v, %v", m.ID, p, err)
			}
			if !slices.Contains(synced, p.Key) {
				t.Errorf("receipt %s recorded without being flushed (flushed: %v)", p.Key, synced)
			}
		}
	})
}

// TestEngineDeliversEveryMessageOnce runs many deliveries through a worker and requires
// each attempted exactly once and recorded delivered, its document opened under the key
// its claim carries, without a read of the store per attempt.
func TestEngineDeliversEveryMessageOnce(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		msgs := seed(t, s, "sink", 300)
		var mu sync.Mutex
		seen := map[int64]int{}
		sig := &localSignals{}
		store := &countingStore{Store: s}
		payloads := &openedPayloads{}
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
			mu.Lock()
			seen[a.Message.ID]++
			mu.Unlock()
			return delivery.Delivered()
		}), delivery.TargetOptions{MaxConcurrent: 8})
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
		for _, m := range msgs {
			if seen[m.ID] != 1 {
				t.Errorf("message %d attempted %d times", m.ID, seen[m.ID])
			}
		}
		if n := store.reads.Load(); n != 0 {
			t.Errorf("the engine read payload rows %d times; the claims carry them", n)
		}
		payloads.mu.Lock()
		defer payloads.mu.Unlock()
		if len(payloads.keys) != len(msgs) {
			t.Errorf("opened %d documents, want %d", len(payloads.keys), len(msgs))
		}
		for _, k := range payloads.keys {
			if k != "k" {
				t.Fatalf("opened %q, want the document's key k", k)
			}
		}
	})
}

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

// TestEngineStopReleasesInterruptedDeliveries: an attempt still running when the drain
// time is up is interrupted and handed back due again, without counting as an attempt.
func TestEngineStopReleasesInterruptedDeliveries(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		msgs := seed(t, s, "slow", 1)
		sig := &localSignals{}
		e := newEngine(s, sig)
		_ = e.Start(context.Background())
		var started atomic.Bool
		err := e.AddTarget("slow", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			started.Store(true)
			<-ctx.Done()
			return delivery.Transient(delivery.ClassTransport, ctx.Err())
		}), delivery.TargetOptions{MaxConcurrent: 1})
		if err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"slow"})
		waitFor(t, "the attempt to start", started.Load)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		d := deliveryOf(t, s, msgs[0].ID)
		if d.State != persistence.DeliveryQueued || d.Attempts != 0 {
			t.Errorf("after an interrupted stop the delivery is %s with %d attempts, want queued with 0", d.State, d.Attempts)
		}
	})
}

// TestEngineRetriesThenFails applies the target's retry policy: transient failures are
// retried until the policy's retries are used up, then the delivery fails with the reason.
func TestEngineRetriesThenFails(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		msgs := seed(t, s, "down", 1)
		sig := &localSignals{}
		e := newEngine(s, sig)
		_ = e.Start(context.Background())
		defer e.Stop(context.Background())
		var calls atomic.Int32
		two := 2
		err := e.AddTarget("down", deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			calls.Add(1)
			return delivery.Transient(delivery.ClassTransport, errors.New("connection refused"))
		}), delivery.TargetOptions{MaxConcurrent: 1, Retry: delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(10 * time.Millisecond), MaxRetries: &two}})
		if err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"down"})
		waitFor(t, "the delivery to fail", func() bool { return deliveryOf(t, s, msgs[0].ID).State == persistence.DeliveryFailed })
		d := deliveryOf(t, s, msgs[0].ID)
		if d.Attempts != 3 || calls.Load() != 3 {
			t.Errorf("attempts %d, calls %d; want 3 (one try and two retries)", d.Attempts, calls.Load())
		}
		if d.LastError == "" {
			t.Error("the failure has no reason")
		}
	})
}

// An engine never started (a process whose start failed before it) stops at once rather
// than waiting for an outcome writer that never ran.
func TestEngineStopWithoutStart(t *testing.T) {
	s := dbtest.SQLite(t)
	e := newEngine(s, &localSignals{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Stop waited for its deadline")
	}
}
