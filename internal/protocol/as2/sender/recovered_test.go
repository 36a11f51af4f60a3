package sender

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/storage"
)

// panickingBlobs opens no document: it panics, as a parser bug in an attempt would.
type panickingBlobs struct{ *storage.Local }

func (panickingBlobs) Open(context.Context, string) (io.ReadCloser, error) {
	panic("document reader broke")
}

// TestPanickingSendFollowsPartnerPolicy runs the sender under the engine with its
// default 1 s backstop policy: an attempt that panics is retried when the partner
// profile's policy says (ten minutes here), not a second later.
func TestPanickingSendFollowsPartnerPolicy(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) {
			noJitter := 0.0 // the test holds the time of the next attempt
			o.Remote.Retry = delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(10 * time.Minute), Jitter: &noJitter}
		})
		p.setAnswer(p.answerMDN(positive))
		sig := &signals{}
		e := delivery.NewEngine(s, panickingBlobs{b.blobs}, sig, testLogger(t), delivery.Config{PollInterval: 20 * time.Millisecond})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Stop(context.Background()) })
		if err := e.AddTarget(testTarget, b.sender, NewConfig().Options()); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		msg := b.ingest(t, "po.edi", testPayload())
		var d persistence.Delivery
		deadline := time.Now().Add(20 * time.Second)
		for {
			ds, err := s.ListDeliveries(context.Background(), msg.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d = ds[0]; d.State == persistence.DeliveryRetrying {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("delivery %s (%s), want retrying", d.State, d.LastError)
			}
			time.Sleep(10 * time.Millisecond) // polling interval
		}
		if d.Attempts != 1 || !strings.Contains(d.LastError, "panicked: document reader broke") {
			t.Errorf("attempts %d, reason %q; want 1 and the panic", d.Attempts, d.LastError)
		}
		if d.NextAttemptAt == nil || d.NextAttemptAt.Before(start.Add(9*time.Minute)) {
			t.Errorf("next attempt at %v, want the profile's ten minutes after %v", d.NextAttemptAt, start)
		}
		if n := len(p.requests()); n != 0 {
			t.Errorf("%d requests reached the partner", n)
		}
	})
}
