package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"wharf/internal/logging"
	"wharf/internal/persistence"
	"wharf/internal/storage"
)

// Store is what the engine needs of persistence.
type Store interface {
	ClaimDeliveries(ctx context.Context, target persistence.InstanceName, n int, lease time.Duration, now time.Time) ([]persistence.Claim, error)
	RenewLease(ctx context.Context, deliveryID int64, token string, until time.Time) error
	CompleteDeliveries(ctx context.Context, cs []persistence.Completion) ([]error, error)
	ReleaseDeliveries(ctx context.Context, rs []persistence.Release) error
	GetPayload(ctx context.Context, messageID int64, stage persistence.PayloadStage) (persistence.Payload, error)
}

// Queue is where a worker claims work and records its outcomes. The engine's Store is
// the queue of message deliveries; a target whose Deliverer implements QueueOwner brings
// its own (the notifier's notification rows), and the engine runs it the same way: claims
// under a renewed lease, the instance's retry policy, draining at shutdown.
type Queue interface {
	ClaimDeliveries(ctx context.Context, target persistence.InstanceName, n int, lease time.Duration, now time.Time) ([]persistence.Claim, error)
	RenewLease(ctx context.Context, deliveryID int64, token string, until time.Time) error
	CompleteDeliveries(ctx context.Context, cs []persistence.Completion) ([]error, error)
	ReleaseDeliveries(ctx context.Context, rs []persistence.Release) error
}

// QueueOwner is implemented by a Deliverer whose work is not message deliveries. Its
// attempts have no document: Attempt.Open fails and Attempt.Message is zero but for
// what the queue's claims fill in.
type QueueOwner interface {
	DeliveryQueue() Queue
}

// Payloads opens stored payload blobs and makes those targets wrote durable.
type Payloads interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	Sync(ctx context.Context, keys []string) error
}

// Signals carries wake-ups between dispatchers and workers (the bus in production).
type Signals interface {
	Wake(targets []persistence.InstanceName)
	// OnWake calls fn whenever target is woken, until cancel is called.
	OnWake(target persistence.InstanceName, fn func()) (cancel func(), err error)
}

// Config tunes the engine.
type Config struct {
	// Lease tells how long a claim holds without renewal; workers renew at a third of it.
	// It is asked at every claim, so a settings change applies at once.
	Lease func() time.Duration
	// PollInterval is how often an idle worker looks for due work without a wake-up.
	PollInterval time.Duration
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Metrics hears wake-ups, attempts and lost claims; nil counts nothing.
	Metrics Metrics
	// Tracer makes each attempt's span (tracing.go); nil traces nothing.
	Tracer trace.Tracer
}

func (c Config) withDefaults() Config {
	if c.Lease == nil {
		c.Lease = func() time.Duration { return 60 * time.Second }
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Metrics == nil {
		c.Metrics = noMetrics{}
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider().Tracer("")
	}
	return c
}

// Engine runs one worker per target instance and writes their outcomes in batches.
type Engine struct {
	store    Store
	payloads Payloads
	signals  Signals
	log      *slog.Logger
	cfg      Config

	mu      sync.Mutex
	workers map[persistence.InstanceName]*worker
	closed  bool
	started bool // the outcome writer runs; a process whose start failed never ran it

	completions chan pending
	batcherDone chan struct{}
}

type pending struct {
	q      Queue // nil: the engine's store
	target persistence.InstanceName
	c      persistence.Completion
	ctx    context.Context
	done   chan struct{}
}

// NewEngine returns an engine; Start begins recording outcomes.
func NewEngine(store Store, payloads Payloads, signals Signals, log *slog.Logger, cfg Config) *Engine {
	return &Engine{
		store:       store,
		payloads:    payloads,
		signals:     signals,
		log:         log.With("component", "delivery"),
		cfg:         cfg.withDefaults(),
		workers:     map[persistence.InstanceName]*worker{},
		completions: make(chan pending, 1024),
		batcherDone: make(chan struct{}),
	}
}

// Start runs the outcome writer.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.started {
		return errors.New("delivery engine is stopped or already started")
	}
	e.started = true
	go e.runBatcher()
	return nil
}

// AddTarget starts a worker for a target instance.
func (e *Engine) AddTarget(name persistence.InstanceName, d Deliverer, opts TargetOptions) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("delivery engine is stopped")
	}
	if _, ok := e.workers[name]; ok {
		return fmt.Errorf("target %s already has a worker", name)
	}
	w := newWorker(e, name, d, opts.Options())
	cancel, err := e.signals.OnWake(name, func() {
		e.cfg.Metrics.Woken(name)
		w.poke()
	})
	if err != nil {
		return fmt.Errorf("subscribe wake-ups of %s: %w", name, err)
	}
	w.unsubscribe = cancel
	e.workers[name] = w
	go w.loop()
	return nil
}

// RemoveTarget quiesces a target's worker: it claims nothing new, lets attempts in
// flight finish until ctx ends, then interrupts the rest and releases their claims.
func (e *Engine) RemoveTarget(ctx context.Context, name persistence.InstanceName) error {
	e.mu.Lock()
	w, ok := e.workers[name]
	delete(e.workers, name)
	e.mu.Unlock()
	if !ok {
		return nil
	}
	return w.stop(ctx)
}

// HasTarget reports whether a worker runs for name.
func (e *Engine) HasTarget(name persistence.InstanceName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.workers[name]
	return ok
}

// Stop drains every worker within ctx, then flushes the outcomes still queued.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	started := e.started
	ws := make([]*worker, 0, len(e.workers))
	for _, w := range e.workers {
		ws = append(ws, w)
	}
	e.workers = map[persistence.InstanceName]*worker{}
	e.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.stop(ctx)
		}()
	}
	wg.Wait()
	close(e.completions)
	if started {
		<-e.batcherDone
	}
	return errors.Join(errs...)
}

// complete queues an outcome and waits until it is written (or ctx ends), so a worker's
// slot frees only when the database knows the result.
func (e *Engine) complete(ctx context.Context, q Queue, target persistence.InstanceName, c persistence.Completion) {
	p := pending{q: q, target: target, c: c, ctx: ctx, done: make(chan struct{})}
	e.completions <- p
	<-p.done
}

// runBatcher writes outcomes in batches: whatever is queued when a write starts goes into
// one transaction, so a busy engine pays one commit for many deliveries.
func (e *Engine) runBatcher() {
	defer close(e.batcherDone)
	const maxBatch = 256
	batch := make([]pending, 0, maxBatch)
	for p := range e.completions {
		batch = append(batch[:0], p)
	fill:
		for len(batch) < maxBatch {
			select {
			case q, ok := <-e.completions:
				if !ok {
					break fill
				}
				batch = append(batch, q)
			default:
				break fill
			}
		}
		// Outcomes of targets with their own queue are written to that queue, apart.
		own := batch[:0:0]
		rest := batch[:0]
		for _, p := range batch {
			if p.q != nil {
				own = append(own, p)
			} else {
				rest = append(rest, p)
			}
		}
		if len(rest) > 0 {
			e.writeBatch(rest)
		}
		for len(own) > 0 {
			q := own[0].q
			var same, other []pending
			for _, p := range own {
				if p.q == q {
					same = append(same, p)
				} else {
					other = append(other, p)
				}
			}
			e.writeQueueBatch(q, same)
			own = other
		}
	}
}

// writeQueueBatch records the outcomes of one target's own queue.
func (e *Engine) writeQueueBatch(q Queue, batch []pending) {
	cs := make([]persistence.Completion, len(batch))
	for i, p := range batch {
		cs[i] = p.c
	}
	results, err := q.CompleteDeliveries(context.Background(), cs)
	if err != nil {
		// The leases run out and the queue's claims take the rows again.
		e.log.Error("record outcomes of an own queue", "count", len(cs), "err", err)
	}
	for i, p := range batch {
		if err == nil && i < len(results) && results[i] != nil {
			e.log.WarnContext(p.ctx, "outcome dropped: claim lost", "err", results[i])
			e.cfg.Metrics.ClaimLost(p.target)
		}
		close(p.done)
	}
}

func (e *Engine) writeBatch(batch []pending) {
	cs := make([]persistence.Completion, len(batch))
	var keys []string
	for i, p := range batch {
		cs[i] = p.c
		for _, pl := range p.c.Payloads {
			keys = append(keys, pl.Key)
		}
	}
	// The stages targets stored are flushed together before the rows that name them.
	if len(keys) > 0 {
		if err := e.payloads.Sync(context.Background(), keys); err != nil {
			e.log.Error("flush the payloads targets stored; they are not recorded", "count", len(keys), "err", err)
			for i := range cs {
				cs[i].Payloads = nil
			}
		}
	}
	// A database hiccup must not lose outcomes: retry a few times; if it still fails the
	// leases run out and the sweep makes the deliveries due again.
	var (
		results []error
		err     error
	)
	for try := 0; try < 5; try++ {
		results, err = e.store.CompleteDeliveries(context.Background(), cs)
		if err == nil {
			break
		}
		e.log.Error("record delivery outcomes", "count", len(cs), "try", try+1, "err", err)
		time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
	}
	for i, p := range batch {
		if err == nil && results[i] != nil {
			e.log.WarnContext(p.ctx, "outcome dropped: claim lost", "err", results[i])
			e.cfg.Metrics.ClaimLost(p.target)
		}
		close(p.done)
	}
}

// worker runs the attempts of one target.
type worker struct {
	e           *Engine
	name        persistence.InstanceName
	d           Deliverer
	q           Queue // the target's own queue; nil for message deliveries
	opts        TargetOptions
	log         *slog.Logger
	unsubscribe func()

	wake     chan struct{}
	slotFree chan struct{}
	quit     chan struct{}
	loopDone chan struct{}

	// attemptCtx is cancelled when draining runs out of time.
	attemptCtx    context.Context
	cancelAttempt context.CancelFunc
	attempts      sync.WaitGroup

	mu       sync.Mutex
	inflight int
	rnd      *rand.Rand
}

func newWorker(e *Engine, name persistence.InstanceName, d Deliverer, opts TargetOptions) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	var q Queue
	if o, ok := d.(QueueOwner); ok {
		q = o.DeliveryQueue()
	}
	return &worker{
		e: e, name: name, d: d, q: q, opts: opts,
		log:           e.log.With("target", string(name)),
		wake:          make(chan struct{}, 1),
		slotFree:      make(chan struct{}, 1),
		quit:          make(chan struct{}),
		loopDone:      make(chan struct{}),
		attemptCtx:    ctx,
		cancelAttempt: cancel,
		rnd:           rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(len(name)))),
	}
}

func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) loop() {
	defer close(w.loopDone)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		w.mu.Lock()
		free := w.opts.MaxConcurrent - w.inflight
		busy := w.inflight > 0
		w.mu.Unlock()
		// Claims come in chunks: while attempts are in flight, wait until half the slots
		// are free, so one claim transaction (one durable commit) serves several
		// deliveries rather than one.
		waitForSlot := free > 0 && busy && 2*free < w.opts.MaxConcurrent
		if free > 0 && !waitForSlot {
			n, err := w.claimAndStart(free)
			if err != nil {
				w.log.Error("claim deliveries", "err", err)
			}
			waitForSlot = n == free // more may be due
		}
		if waitForSlot {
			select {
			case <-w.slotFree:
				continue
			case <-w.quit:
				return
			}
		}
		// Timers need no draining since Go 1.23: Reset discards a pending fire.
		timer.Reset(w.e.cfg.PollInterval)
		select {
		case <-w.wake:
		case <-w.slotFree:
		case <-timer.C:
		case <-w.quit:
			return
		}
	}
}

func (w *worker) claimAndStart(n int) (int, error) {
	now := w.e.cfg.Now()
	lease := w.e.cfg.Lease()
	claims, err := w.queue().ClaimDeliveries(w.attemptCtx, w.name, n, lease, now)
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	w.inflight += len(claims)
	w.mu.Unlock()
	for _, c := range claims {
		w.attempts.Add(1)
		go w.attempt(c, lease)
	}
	return len(claims), nil
}

func (w *worker) attempt(c persistence.Claim, lease time.Duration) {
	defer w.attempts.Done()
	defer func() {
		w.mu.Lock()
		w.inflight--
		w.mu.Unlock()
		select {
		case w.slotFree <- struct{}{}:
		default:
		}
	}()
	ctx := logging.WithDeliveryID(logging.WithMessage(w.attemptCtx, c.Message.ID, c.Message.CorrelationID), c.Delivery.ID)
	ctx, span := w.startSpan(ctx, c)
	var res Result
	var outcome string
	defer func() { endSpan(span, outcome, res) }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	lost := make(chan struct{})
	renewDone := make(chan struct{})
	go w.renew(ctx, c.Delivery, lease, lost, renewDone)

	var opened openedDocs
	a := Attempt{
		Delivery: c.Delivery,
		Message:  c.Message,
		Number:   c.Delivery.Attempts,
		Open: func(ctx context.Context) (io.ReadCloser, error) {
			if w.q != nil {
				return nil, errors.New("this target's work has no document")
			}
			doc := c.Document
			if doc.Key == "" {
				// The claim found no document row (an erased message): the read names
				// what is missing.
				p, err := w.e.store.GetPayload(ctx, c.Message.ID, persistence.PayloadUnpacked)
				if err != nil {
					return nil, fmt.Errorf("find document: %w", err)
				}
				doc = p
			}
			rc, err := w.e.payloads.Open(ctx, doc.Key)
			if err != nil {
				return nil, err
			}
			return opened.add(storage.Verify(rc, doc)), nil
		},
	}
	began := time.Now()
	res = w.deliver(ctx, a)
	took := time.Since(began)
	if err := opened.corruption(); err != nil && res.Kind != persistence.OutcomeDelivered && res.Kind != persistence.OutcomeAwaitingAck {
		// The target saw a broken read; the cause is the stored document, which a retry
		// does not mend, so the delivery fails naming it.
		w.log.ErrorContext(ctx, "the stored document does not match its digest", "err", err)
		res = Permanent(ClassInternal, err)
	}
	cancel()
	<-renewDone

	select {
	case <-lost:
		w.log.WarnContext(ctx, "attempt finished after its claim was lost; outcome dropped", "outcome", res.Kind)
		outcome = AttemptLost
		w.e.cfg.Metrics.AttemptDone(w.name, AttemptLost, took)
		w.keepPayloads(ctx, c, res)
		return
	default:
	}
	if w.attemptCtx.Err() != nil && res.Kind != persistence.OutcomeDelivered && res.Kind != persistence.OutcomeAwaitingAck {
		// Interrupted by shutdown: hand the delivery back without counting a failure.
		err := w.queue().ReleaseDeliveries(context.Background(), []persistence.Release{{
			DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Reason: "interrupted by shutdown",
		}})
		if err != nil {
			w.log.ErrorContext(ctx, "release interrupted delivery", "err", err)
		}
		outcome = AttemptInterrupted
		w.e.cfg.Metrics.AttemptDone(w.name, AttemptInterrupted, took)
		w.keepPayloads(ctx, c, res)
		return
	}
	w.mu.Lock()
	now := w.e.cfg.Now()
	comp := decide(res, w.opts.Retry, c.Delivery.Retry, c.Delivery.Attempts, now, w.rnd)
	w.mu.Unlock()
	comp = w.opts.awaitCompletion(comp, now)
	comp.DeliveryID, comp.Token = c.Delivery.ID, c.Delivery.ClaimToken
	comp.Reason = persistence.SanitizeReason(comp.Reason)
	comp.Payloads, comp.Downstream = res.Payloads, res.Downstream
	switch comp.Kind {
	case persistence.OutcomeDelivered, persistence.OutcomeAwaitingAck:
		w.log.DebugContext(ctx, "delivery attempt succeeded", "outcome", comp.Kind, "attempt", c.Delivery.Attempts)
	default:
		w.log.WarnContext(ctx, "delivery attempt failed", "outcome", comp.Kind, "attempt", c.Delivery.Attempts, "reason", comp.Reason)
	}
	outcome = string(comp.Kind)
	w.e.cfg.Metrics.AttemptDone(w.name, string(comp.Kind), took)
	w.e.complete(ctx, w.q, w.name, comp)
}

// queue is where the worker claims: its target's own queue, or the message deliveries.
func (w *worker) queue() Queue {
	if w.q != nil {
		return w.q
	}
	return w.e.store
}

// keepPayloads records the stages an attempt stored, and what its answer said downstream,
// whose outcome is not recorded (its claim was lost, or shutdown interrupted it): a
// completion without a token changes no state but still records them.
func (w *worker) keepPayloads(ctx context.Context, c persistence.Claim, res Result) {
	if len(res.Payloads) == 0 && len(res.Downstream) == 0 {
		return
	}
	w.e.complete(ctx, w.q, w.name, persistence.Completion{DeliveryID: c.Delivery.ID, Kind: res.Kind, Payloads: res.Payloads,
		Downstream: res.Downstream, AckDeadline: res.Deadline})
}

// deliver runs the target, turning a panic into a failed attempt: a transient failure
// that names the panic, retried on the target's own schedule (see Recoverer) like any
// other failure, so a message that makes a target panic is not sent again every second.
func (w *worker) deliver(ctx context.Context, a Attempt) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			cause := fmt.Errorf("target %s panicked: %v", w.name, r)
			w.log.ErrorContext(ctx, "target panicked", "panic", r, "attempt", a.Number, "stack", string(debug.Stack()))
			res = w.recovered(ctx, a, cause)
		}
	}()
	return w.d.Deliver(ctx, a)
}

// recovered asks a Recoverer target how to go on after a panic; any other target, or one
// whose Recovered panics too, gets a transient failure of class internal (our own error)
// under its instance's retry policy.
func (w *worker) recovered(ctx context.Context, a Attempt, cause error) (res Result) {
	res = Transient(ClassInternal, cause)
	rc, ok := w.d.(Recoverer)
	if !ok {
		return res
	}
	defer func() {
		if r := recover(); r != nil {
			w.log.ErrorContext(ctx, "target panicked while recovering from a panic", "panic", r, "stack", string(debug.Stack()))
			res = Transient(ClassInternal, cause)
		}
	}()
	return rc.Recovered(ctx, a, cause)
}

// renew keeps the lease alive while the attempt runs; a lost claim cancels nothing in
// the target (it may be mid-write) but its outcome is dropped.
func (w *worker) renew(ctx context.Context, d persistence.Delivery, lease time.Duration, lost, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := w.queue().RenewLease(context.WithoutCancel(ctx), d.ID, d.ClaimToken, w.e.cfg.Now().Add(lease))
			if errors.Is(err, persistence.ErrLostClaim) {
				w.log.WarnContext(ctx, "claim lost while delivering")
				w.e.cfg.Metrics.ClaimLost(w.name)
				close(lost)
				return
			}
			if err != nil {
				w.log.ErrorContext(ctx, "renew lease", "err", err)
			}
		}
	}
}

// stop quiesces the worker, waits for attempts until ctx ends, then interrupts them.
func (w *worker) stop(ctx context.Context) error {
	if w.unsubscribe != nil {
		w.unsubscribe()
	}
	close(w.quit)
	<-w.loopDone
	done := make(chan struct{})
	go func() {
		w.attempts.Wait()
		close(done)
	}()
	select {
	case <-done:
		w.cancelAttempt()
		return nil
	case <-ctx.Done():
		w.log.Warn("drain time is up; interrupting deliveries in flight")
		w.cancelAttempt()
		<-done
		return nil
	}
}

// openedDocs keeps the documents an attempt opened, to ask them afterwards whether the
// stored bytes were corrupt.
type openedDocs struct {
	mu   sync.Mutex
	docs []io.Reader
}

func (o *openedDocs) add(rc io.ReadCloser) io.ReadCloser {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.docs = append(o.docs, rc)
	return rc
}

func (o *openedDocs) corruption() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.docs {
		if err := storage.Corruption(d); err != nil {
			return err
		}
	}
	return nil
}
