package alert

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// flakySink refuses the first fails alerts it is given, as a bus out of reach does.
type flakySink struct {
	mu    sync.Mutex
	fails int
	tries int
	got   []Alert
}

func (s *flakySink) Send(_ context.Context, a Alert) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if s.fails > 0 {
		s.fails--
		return errors.New("bus unreachable")
	}
	s.got = append(s.got, a)
	return nil
}

func (s *flakySink) received() []Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Alert(nil), s.got...)
}

func TestQueueHoldsAlertsWhileTheSinkRefuses(t *testing.T) {
	sink := &flakySink{fails: 3}
	q := NewQueue(sink, nil, 0)
	q.retryEvery = time.Millisecond
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	q.Raise(Alert{Code: DatabaseUnavailable, Subject: Subject{Kind: "database"}})
	q.Raise(Resolution(DatabaseUnavailable, Subject{Kind: "database"}))
	deadline := time.Now().Add(5 * time.Second)
	for len(sink.received()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the sink got %d alerts after %d tries, want both", len(sink.received()), sink.tries)
		}
		time.Sleep(time.Millisecond)
	}
	got := sink.received()
	// The alert and its resolution go out in the order raised, none dropped.
	if got[0].Resolves || !got[1].Resolves || q.Dropped() != 0 {
		t.Fatalf("got %+v, dropped %d", got, q.Dropped())
	}
	if got[0].DedupeKey != got[1].DedupeKey {
		t.Fatalf("dedupe keys differ: %q, %q", got[0].DedupeKey, got[1].DedupeKey)
	}
	if err := q.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestQueueDropsARefusedAlertWhenStopping(t *testing.T) {
	sink := &flakySink{fails: 1 << 30}
	q := NewQueue(sink, nil, 0)
	q.retryEvery = time.Hour
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	q.Raise(Alert{Code: DatabaseUnavailable, Subject: Subject{Kind: "database"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.Stop(ctx); err != nil {
		t.Fatalf("stop while the sink refuses: %v", err)
	}
	if q.Dropped() != 1 {
		t.Fatalf("dropped = %d, want 1", q.Dropped())
	}
}
