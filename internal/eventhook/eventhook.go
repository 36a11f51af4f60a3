// Package eventhook is the event-webhook module: subscriptions are instances of the
// event-webhook plugin type (URL, whsec_ secret, event types, party filter), fed from the
// message history by an outbox cursor and sent, signed per Standard Webhooks, by the
// delivery engine's worker of each instance with its retry policy. A subscription whose
// endpoint fails for its disable_after is disabled with an alert until an operator
// enables it again.
package eventhook

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"wharf/internal/bus"
	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// ModuleName keys the module's runtime.
const ModuleName = "eventhook"

//go:embed schema
var schemaFS embed.FS

//go:embed openapi.yaml
var openAPI []byte

func init() {
	schema, err := fs.Sub(schemaFS, "schema")
	if err != nil {
		panic(err)
	}
	module.Register(module.Module{
		Name: ModuleName,
		Plugins: []module.Plugin{{
			Type:      persistence.PluginEventWebhook,
			Role:      module.RoleTarget,
			NewConfig: func() module.Config { return NewConfig() },
			NewTarget: newTarget,
		}},
		Schema:  schema,
		OpenAPI: openAPI,
		Setup:   func(_ context.Context, core module.Core) (any, error) { return New(core), nil },
	})
}

var (
	_ module.Config       = (*Config)(nil)
	_ module.WriteOnly    = (*Config)(nil)
	_ module.SecretBinder = (*Config)(nil)
	_ module.APIProvider  = (*Runtime)(nil)
	_ module.Stopper      = (*Runtime)(nil)
)

// Background work of the runtime.
const (
	// outboxBatch bounds the history rows one pass turns into events.
	outboxBatch = 500
	// outboxPoll is how often the outbox looks without a wake-up (they are lossy).
	outboxPoll = 2 * time.Second
	// outboxGap is the least time between the starts of two passes woken by history.
	outboxGap = 50 * time.Millisecond
	// OutboxGrace is how long the outbox waits for a missing history id before it
	// takes the id's transaction for rolled back (see events.Contiguous).
	OutboxGrace = 10 * time.Second
	// Retention of the delivery log: finished rows older than this are deleted.
	RetentionAge      = 30 * 24 * time.Hour
	retentionInterval = time.Hour
)

// Runtime is the module's part of a process: the outbox that queues events for the
// subscriptions, and what the subscriptions running here share.
type Runtime struct {
	core module.Core
	db   module.SQL
	log  *slog.Logger
	// now is the clock of rows and health; tests move it.
	now func() time.Time

	unsub func()
	subs  subscriptionCache
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

// New returns the runtime over the core's database and bus.
func New(core module.Core) *Runtime {
	logger := core.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runtime{core: core, db: core.DB, log: logger.With("component", "event-webhooks"), now: time.Now,
		subs: subscriptionCache{ttl: subscriptionsTTL}, wake: make(chan struct{}, 1)}
}

func (rt *Runtime) clock() time.Time { return rt.now().UTC() }

// Start runs the outbox, woken by the history announcements on the bus.
func (rt *Runtime) Start(ctx context.Context) error {
	if rt.core.Bus != nil {
		unsub, err := rt.core.Bus.Subscribe(bus.AllMessageEventsSubject, func(string, []byte) { rt.nudge() })
		if err != nil {
			return fmt.Errorf("event webhooks: listen for history: %w", err)
		}
		// A subscription made, changed or removed in any process drops the copy of the
		// subscriptions, and the next pass reads them again.
		unsubConfig, err := rt.core.Bus.Subscribe(bus.ConfigChangedSubject, func(_ string, data []byte) {
			if string(data) == bus.ConfigChangedPlugins {
				rt.invalidateSubscriptions()
				rt.nudge()
			}
		})
		if err != nil {
			unsub()
			return fmt.Errorf("event webhooks: listen for configuration changes: %w", err)
		}
		rt.unsub = func() { unsub(); unsubConfig() }
	}
	rt.quit, rt.done = make(chan struct{}), make(chan struct{})
	go rt.run()
	return nil
}

// Stop ends the outbox; a pass under way finishes first.
func (rt *Runtime) Stop(ctx context.Context) error {
	if rt.unsub != nil {
		rt.unsub()
		rt.unsub = nil
	}
	if rt.quit == nil {
		return nil
	}
	close(rt.quit)
	select {
	case <-rt.done:
	case <-ctx.Done():
	}
	rt.quit = nil
	return nil
}

func (rt *Runtime) nudge() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

func (rt *Runtime) run() {
	defer close(rt.done)
	t := time.NewTicker(outboxPoll)
	defer t.Stop()
	var lastRetention time.Time
	for {
		ctx := context.Background()
		began := time.Now()
		for {
			more, err := rt.Pass(ctx)
			if err != nil {
				rt.log.Error("queue events for the webhooks", "err", err)
				break
			}
			if !more {
				break
			}
		}
		if time.Since(lastRetention) >= retentionInterval {
			lastRetention = time.Now()
			if n, err := rt.Retain(ctx); err != nil {
				rt.log.Error("trim the event webhook log", "err", err)
			} else if n > 0 {
				rt.log.Info("event webhook log trimmed", "rows", n)
			}
		}
		select {
		case <-rt.wake:
			// History is announced once per commit: a pass waits until outboxGap after
			// the one before, so a busy gateway's passes each take many commits' lines
			// rather than one pass (and one commit of the cursor) per commit.
			if !rt.waitGap(outboxGap - time.Since(began)) {
				return
			}
		case <-t.C:
		case <-rt.quit:
			return
		}
	}
}

// waitGap waits d, or until the runtime stops; it reports whether to go on.
func (rt *Runtime) waitGap(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	gap := time.NewTimer(d)
	defer gap.Stop()
	select {
	case <-gap.C:
		return true
	case <-rt.quit:
		return false
	}
}

// wakeInstances tells the instances' workers that rows are due.
func (rt *Runtime) wakeInstances(names []string) {
	bus.WakeTargets(rt.core.Bus, names)
}

func runtimeOf(env module.Env) (*Runtime, error) {
	rt, ok := env.Runtime(ModuleName).(*Runtime)
	if !ok {
		return nil, fmt.Errorf("the %s module was not set up", ModuleName)
	}
	return rt, nil
}

func newTarget(env module.Env, name persistence.InstanceName, cfg module.Config) (delivery.Deliverer, error) {
	rt, err := runtimeOf(env)
	if err != nil {
		return nil, err
	}
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("event-webhook %s: config is %T, want *Config", name, cfg)
	}
	return newSubscriber(rt, string(name), c)
}
