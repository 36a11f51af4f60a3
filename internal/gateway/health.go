package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/api"
	"wharf/internal/persistence"
	"wharf/internal/probe"
)

// healthPingTimeout bounds one ping of the database or the bus.
const healthPingTimeout = 3 * time.Second

// healthReuse is how long a check's result answers further checks: /readyz needs no
// token, and probes arriving together cost one ping.
const healthReuse = 500 * time.Millisecond

// Health watches what the process depends on, the database and the bus: it pings both
// at the health_check_interval setting (and at once when a request failed for want of the
// database), answers /readyz, makes the services read degraded while either is out of
// reach, and raises database_unavailable when the database stops answering and its
// resolution when it answers again. The alert cannot be recorded while the database is
// down: the notifier holds it in memory and records and sends it once it is back.
type Health struct {
	db       func(ctx context.Context) error
	bus      func(ctx context.Context) error
	alerts   alert.Raiser
	interval func() time.Duration
	log      *slog.Logger
	// metrics hears each check's findings; nil when the process keeps no metrics.
	metrics healthMetrics
	// roles are what the process runs, each ready once started.
	roles roleSet

	// check serializes the checks: a probe that arrives during one waits for it and
	// takes its result.
	check   sync.Mutex
	last    probe.Readiness
	checked time.Time

	mu      sync.Mutex
	dbDown  bool
	busDown bool

	nudge chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

var _ api.Health = (*Health)(nil)

// healthMetrics hears what each check found and how long each ping took.
type healthMetrics interface {
	Checked(dbUp, busUp bool, dbPing, busPing time.Duration)
}

func newHealth(db, bus func(ctx context.Context) error, alerts alert.Raiser, interval func() time.Duration, log *slog.Logger) *Health {
	return &Health{db: db, bus: bus, alerts: alerts, interval: interval, log: log.With("component", "health"),
		nudge: make(chan struct{}, 1)}
}

// Check pings the database and the bus now, records what it found, raises or resolves
// database_unavailable on a change, and adds whether the process's roles have started.
func (h *Health) Check(ctx context.Context) probe.Readiness {
	rd := h.ping(ctx)
	rd.Roles, rd.Waiting = h.roles.state()
	return rd
}

// ping checks the database and the bus, or answers from a check made within healthReuse.
func (h *Health) ping(ctx context.Context) probe.Readiness {
	h.check.Lock()
	defer h.check.Unlock()
	if !h.checked.IsZero() && time.Since(h.checked) < healthReuse {
		return h.last
	}
	defer func() { h.checked = time.Now() }()
	began := time.Now()
	dbErr := ping(ctx, h.db)
	dbTook := time.Since(began)
	busErr := ping(ctx, h.bus)
	busTook := time.Since(began) - dbTook
	if h.metrics != nil {
		h.metrics.Checked(dbErr == nil, busErr == nil, dbTook, busTook)
	}
	h.mu.Lock()
	wasDown, wasBusDown := h.dbDown, h.busDown
	h.dbDown, h.busDown = dbErr != nil, busErr != nil
	h.mu.Unlock()
	subject := alert.Subject{Kind: "database", Name: "database"}
	switch {
	case dbErr != nil && !wasDown:
		reason := persistence.SanitizeReason(dbErr.Error())
		h.log.Error("database unavailable", "err", dbErr)
		h.alerts.Raise(alert.Alert{
			Code:    alert.DatabaseUnavailable,
			Subject: subject,
			Summary: "The database does not answer; messages wait until it is back",
			Details: []alert.Detail{{Label: "Error", Value: reason}},
			Link:    "/ui/services",
		})
	case dbErr == nil && wasDown:
		h.log.Info("database available again")
		h.alerts.Raise(alert.Resolution(alert.DatabaseUnavailable, subject))
	}
	switch {
	case busErr != nil && !wasBusDown:
		h.log.Error("bus unavailable", "err", busErr)
	case busErr == nil && wasBusDown:
		h.log.Info("bus available again")
	}
	h.last = probe.Readiness{Database: state(dbErr), Bus: state(busErr)}
	return h.last
}

func ping(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, healthPingTimeout)
	defer cancel()
	return fn(ctx)
}

func state(err error) string {
	if err != nil {
		return "unavailable"
	}
	return "ok"
}

// Down names what did not answer the last check.
func (h *Health) Down() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	if h.dbDown {
		out = append(out, "database")
	}
	if h.busDown {
		out = append(out, "bus")
	}
	return out
}

// Unavailable asks for a check now: a request failed for want of the database.
func (h *Health) Unavailable() {
	select {
	case h.nudge <- struct{}{}:
	default:
	}
}

// Start checks at the interval, and when nudged, until Stop.
func (h *Health) Start(ctx context.Context) error {
	h.quit, h.done = make(chan struct{}), make(chan struct{})
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(h.done)
		for {
			h.Check(ctx)
			t := time.NewTimer(h.interval())
			select {
			case <-h.quit:
				t.Stop()
				return
			case <-h.nudge:
				t.Stop()
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the checks.
func (h *Health) Stop(ctx context.Context) error {
	if h.quit == nil {
		return nil
	}
	close(h.quit)
	select {
	case <-h.done:
	case <-ctx.Done():
	}
	h.quit = nil
	return nil
}
