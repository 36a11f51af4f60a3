package delivery_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/logging"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// A target's log lines about an attempt name the message and its correlation id, taken
// from the context the engine hands it.
func TestAttemptLogsCarryTheCorrelationID(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		msgs := seed(t, s, "logged", 1)
		var mu sync.Mutex
		var buf bytes.Buffer
		log := slog.New(logging.NewHandler(slog.NewTextHandler(&syncWriter{mu: &mu, w: &buf}, nil)))
		sig := &localSignals{}
		e := delivery.NewEngine(s, memPayloads{}, sig, slog.New(slog.DiscardHandler), delivery.Config{PollInterval: 20 * time.Millisecond})
		_ = e.Start(context.Background())
		defer e.Stop(context.Background())
		target := deliverFunc(func(ctx context.Context, a delivery.Attempt) delivery.Result {
			log.InfoContext(ctx, "posting")
			return delivery.Delivered()
		})
		if err := e.AddTarget("logged", target, delivery.TargetOptions{MaxConcurrent: 1}); err != nil {
			t.Fatal(err)
		}
		sig.Wake([]persistence.InstanceName{"logged"})
		waitFor(t, "the attempt", func() bool { return deliveryOf(t, s, msgs[0].ID).State == persistence.DeliveryDelivered })
		mu.Lock()
		defer mu.Unlock()
		line := buf.String()
		if !strings.Contains(line, "message_id=") || !strings.Contains(line, "correlation_id="+msgs[0].CorrelationID) {
			t.Fatalf("log line %q lacks the message and correlation ids", line)
		}
	})
}

type syncWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
