package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// BusSubject is the bus subject alerts travel on, as JSON, from the process that raised them
// to every process running the notifier.
const BusSubject = "alert.raised"

// Raiser takes alerts. Raise never blocks and never fails: an alert that cannot be taken
// is dropped, counted and logged.
type Raiser interface {
	Raise(a Alert)
}

// Discard takes alerts and does nothing with them.
var Discard Raiser = discard{}

type discard struct{}

func (discard) Raise(Alert) {}

// Sink is where a Queue hands alerts (the bus in production).
type Sink interface {
	Send(ctx context.Context, a Alert) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, a Alert) error

func (f SinkFunc) Send(ctx context.Context, a Alert) error { return f(ctx, a) }

// DefaultCapacity is how many alerts a Queue holds before it drops.
const DefaultCapacity = 1024

// Queue is the Raiser of a process: a bounded queue drained by one goroutine into a Sink.
type Queue struct {
	sink Sink
	log  *slog.Logger
	now  func() time.Time

	ch      chan Alert
	dropped atomic.Uint64

	mu       sync.Mutex
	started  bool
	closed   bool
	stopping chan struct{}
	done     chan struct{}
	// retryEvery is the first wait before an alert the sink refused is handed on again;
	// it doubles up to maxRetryWait.
	retryEvery time.Duration
}

// maxRetryWait caps the wait between two tries of an alert the sink refused.
const maxRetryWait = 30 * time.Second

var _ Raiser = (*Queue)(nil)

// NewQueue returns a queue of capacity alerts (DefaultCapacity when 0) for sink.
func NewQueue(sink Sink, log *slog.Logger, capacity int) *Queue {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Queue{sink: sink, log: log.With("component", "alerts"), now: time.Now, ch: make(chan Alert, capacity),
		stopping: make(chan struct{}), done: make(chan struct{}), retryEvery: 500 * time.Millisecond}
}

// Raise queues a; it drops the alert when the queue is full or stopped.
func (q *Queue) Raise(a Alert) {
	if err := a.Normalize(q.now()); err != nil {
		q.log.Error("alert refused", "code", string(a.Code), "err", err)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.drop(a, "stopped")
		return
	}
	select {
	case q.ch <- a:
	default:
		q.drop(a, "queue full")
	}
}

// drop counts a lost alert; the log line is written for the first drop and then every
// hundredth, so a storm cannot flood the log.
func (q *Queue) drop(a Alert, why string) {
	n := q.dropped.Add(1)
	if n == 1 || n%100 == 0 {
		q.log.Warn("alert dropped", "code", string(a.Code), "why", why, "dropped_total", n)
	}
}

// Dropped counts the alerts dropped since the queue was made.
func (q *Queue) Dropped() uint64 { return q.dropped.Load() }

// Start drains the queue into the sink until Stop.
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return fmt.Errorf("alert queue already started")
	}
	q.started = true
	go q.run(context.WithoutCancel(ctx))
	return nil
}

func (q *Queue) run(ctx context.Context) {
	defer close(q.done)
	for a := range q.ch {
		q.handOn(ctx, a)
	}
}

// handOn gives a to the sink, and while the sink refuses (the bus is out of reach) keeps
// it and tries again with a growing wait, so an alert raised during an outage goes out
// when it ends; alerts raised meanwhile wait behind it, in order. Once the queue is
// stopping, a refused alert is dropped.
func (q *Queue) handOn(ctx context.Context, a Alert) {
	wait := q.retryEvery
	for try := 1; ; try++ {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := q.sink.Send(sctx, a)
		cancel()
		if err == nil {
			return
		}
		if try == 1 {
			q.log.Warn("alert not handed on; holding it", "code", string(a.Code), "alert_id", a.ID, "err", err)
		}
		select {
		case <-q.stopping:
			q.drop(a, "stopped while the sink refused it")
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetryWait)
	}
}

// Stop takes no more alerts and hands on those queued, until ctx ends.
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.stopping)
	close(q.ch)
	started := q.started
	q.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop alert queue: %w", ctx.Err())
	}
}

// Encode is an alert's form on the bus.
func Encode(a Alert) ([]byte, error) { return json.Marshal(a) }

// Decode reads an alert from the bus and checks it.
func Decode(b []byte) (Alert, error) {
	var a Alert
	if err := json.Unmarshal(b, &a); err != nil {
		return Alert{}, fmt.Errorf("decode alert: %w", err)
	}
	if err := a.Normalize(time.Now()); err != nil {
		return Alert{}, fmt.Errorf("decode alert: %w", err)
	}
	return a, nil
}
