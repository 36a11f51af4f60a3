package delivery_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
)

// memQueue is a target's own queue of n items, each claimable once until completed with
// a retry.
type memQueue struct {
	mu        sync.Mutex
	due       []int64
	completed map[int64][]persistence.OutcomeKind
	renewed   int
}

func (q *memQueue) ClaimDeliveries(_ context.Context, _ persistence.InstanceName, n int, _ time.Duration, _ time.Time) ([]persistence.Claim, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []persistence.Claim
	for len(q.due) > 0 && len(out) < n {
		id := q.due[0]
		q.due = q.due[1:]
		out = append(out, persistence.Claim{Delivery: persistence.Delivery{ID: id, ClaimToken: "t", Attempts: len(q.completed[id]) + 1}})
	}
	return out, nil
}

func (q *memQueue) RenewLease(context.Context, int64, string, time.Time) error {
	q.mu.Lock()
	q.renewed++
	q.mu.Unlock()
	return nil
}

func (q *memQueue) CompleteDeliveries(_ context.Context, cs []persistence.Completion) ([]error, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range cs {
		q.completed[c.DeliveryID] = append(q.completed[c.DeliveryID], c.Kind)
		if c.Kind == persistence.OutcomeRetry {
			q.due = append(q.due, c.DeliveryID)
		}
	}
	return make([]error, len(cs)), nil
}

func (q *memQueue) ReleaseDeliveries(context.Context, []persistence.Release) error { return nil }

type ownQueueTarget struct {
	q     *memQueue
	tries sync.Map
}

func (o *ownQueueTarget) DeliveryQueue() delivery.Queue { return o.q }

func (o *ownQueueTarget) Deliver(ctx context.Context, a delivery.Attempt) delivery.Result {
	if _, err := a.Open(ctx); err == nil {
		return delivery.Permanent(delivery.ClassInternal, nil) // an own queue's work has no document
	}
	if _, again := o.tries.LoadOrStore(a.Delivery.ID, true); !again {
		return delivery.Transient(delivery.ClassHTTP5xx, delivery.HTTPStatusError(503))
	}
	return delivery.Delivered()
}

// A target with its own queue is claimed and completed there, under its retry policy,
// and never touches the message deliveries.
func TestTargetWithOwnQueue(t *testing.T) {
	s := dbtest.SQLite(t)
	sig := &localSignals{}
	e := newEngine(s, sig)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	q := &memQueue{due: []int64{1, 2, 3}, completed: map[int64][]persistence.OutcomeKind{}}
	n := 3
	opts := delivery.TargetOptions{MaxConcurrent: 2, Retry: delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(time.Millisecond), MaxDelay: delivery.Duration(time.Millisecond), MaxRetries: &n}}
	if err := e.AddTarget("own", &ownQueueTarget{q: q}, opts); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every item delivered", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		done := 0
		for _, ks := range q.completed {
			if len(ks) > 0 && ks[len(ks)-1] == persistence.OutcomeDelivered {
				done++
			}
		}
		return done == 3
	})
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, ks := range q.completed {
		if len(ks) != 2 || ks[0] != persistence.OutcomeRetry {
			t.Errorf("item %d outcomes %v, want retry then delivered", id, ks)
		}
	}
}
