package delivery

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"wharf/internal/logging"
	"wharf/internal/persistence"
)

// SweepStore is what the sweep needs of persistence.
type SweepStore interface {
	ExpireLeases(ctx context.Context, now time.Time, limit int) ([]persistence.Delivery, error)
	WakeDue(ctx context.Context, now time.Time, p persistence.WakeupPolicy, limit int) (woken, stalled []persistence.Delivery, err error)
	ExpireAcks(ctx context.Context, now time.Time, limit int) ([]persistence.Delivery, error)
}

// SweepSettings are read before every pass, so a settings change applies without a
// restart.
type SweepSettings struct {
	Interval time.Duration
	Wakeups  persistence.WakeupPolicy
}

// Sweeper catches up on what wake-ups and workers missed: expired leases, due work
// nobody claimed, and receipts that never came.
type Sweeper struct {
	store    SweepStore
	signals  Signals
	log      *slog.Logger
	settings func(ctx context.Context) SweepSettings
	now      func() time.Time
	// OnStalled is called after commit for each delivery the sweep stalled (the alert
	// hook).
	OnStalled func(ctx context.Context, d persistence.Delivery)
	// Metrics, when set before Start, hears each pass and each expired lease.
	Metrics SweepMetrics
	// Active, when set before Start, is asked before every pass whether this process
	// sweeps (it holds the sweep lock); a standby asks again an interval later.
	Active func(ctx context.Context) bool

	done chan struct{}
	quit chan struct{}
}

// SweepBatch bounds the rows one pass of each kind touches.
const SweepBatch = 500

// NewSweeper returns a sweeper.
func NewSweeper(store SweepStore, signals Signals, log *slog.Logger, settings func(ctx context.Context) SweepSettings) *Sweeper {
	return &Sweeper{store: store, signals: signals, log: log.With("component", "sweep"), settings: settings, now: time.Now}
}

// Start runs the sweep until Stop.
func (s *Sweeper) Start(ctx context.Context) error {
	s.done, s.quit = make(chan struct{}), make(chan struct{})
	go s.run(context.WithoutCancel(ctx))
	return nil
}

// Stop ends the sweep after the pass in progress.
func (s *Sweeper) Stop(ctx context.Context) error {
	if s.quit == nil {
		return nil
	}
	close(s.quit)
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	return nil
}

func (s *Sweeper) run(ctx context.Context) {
	defer close(s.done)
	for {
		set := s.settings(ctx)
		if s.Active == nil || s.Active(ctx) {
			s.Pass(ctx, set)
		}
		t := time.NewTimer(set.Interval)
		select {
		case <-t.C:
		case <-s.quit:
			t.Stop()
			return
		}
	}
}

// Pass runs one sweep.
func (s *Sweeper) Pass(ctx context.Context, set SweepSettings) {
	now := s.now()
	m := s.Metrics
	if m == nil {
		m = noMetrics{}
	}
	rep := SweepReport{At: now}
	began := time.Now()
	defer func() {
		rep.Duration = time.Since(began)
		m.Swept(rep)
	}()
	for {
		expired, err := s.store.ExpireLeases(ctx, now, SweepBatch)
		if err != nil {
			s.log.Error("expire leases", "err", err)
			break
		}
		for _, d := range expired {
			s.log.WarnContext(deliveryCtx(ctx, d), "lease expired; delivery is due again", "target", string(d.Target))
			m.LeaseExpired(d.Target)
		}
		rep.ExpiredLeases += len(expired)
		s.wakeTargets(expired)
		if len(expired) < SweepBatch {
			break
		}
	}
	for {
		woken, stalled, err := s.store.WakeDue(ctx, now, set.Wakeups, SweepBatch)
		if err != nil {
			s.log.Error("wake due deliveries", "err", err)
			break
		}
		s.wakeTargets(woken)
		rep.Woken += len(woken)
		rep.Stalled += len(stalled)
		for _, d := range stalled {
			s.log.WarnContext(deliveryCtx(ctx, d), "delivery stalled: no worker claimed it", "target", string(d.Target), "wakeups", set.Wakeups.MaxDispatches)
			if s.OnStalled != nil {
				s.OnStalled(ctx, d)
			}
		}
		if len(woken)+len(stalled) < SweepBatch {
			break
		}
	}
	for {
		failed, err := s.store.ExpireAcks(ctx, now, SweepBatch)
		if err != nil {
			s.log.Error("expire receipt deadlines", "err", err)
			break
		}
		for _, d := range failed {
			s.log.WarnContext(deliveryCtx(ctx, d), "no receipt or completion report before the deadline; delivery failed",
				"target", string(d.Target), "reason", d.LastError)
		}
		rep.ExpiredAcks += len(failed)
		if len(failed) < SweepBatch {
			break
		}
	}
}

func (s *Sweeper) wakeTargets(ds []persistence.Delivery) {
	var ts []persistence.InstanceName
	for _, d := range ds {
		if !slices.Contains(ts, d.Target) {
			ts = append(ts, d.Target)
		}
	}
	if len(ts) > 0 {
		s.signals.Wake(ts)
	}
}

// deliveryCtx carries a delivery's ids into log lines.
func deliveryCtx(ctx context.Context, d persistence.Delivery) context.Context {
	return logging.WithDeliveryID(logging.WithMessage(ctx, d.MessageID, d.CorrelationID), d.ID)
}
