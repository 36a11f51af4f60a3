// Package notification is the notifier module: it records every alert it hears on the bus,
// and registers the notification-webhook plugin type, whose instances send the alerts
// that pass their rules (minimum severity, codes, cooldown per dedupe key, rate limit with
// one summary of what was held) as webhooks in one of several formats. The sending is a
// queue of its own run by the delivery engine's worker of the instance, so queued rows
// survive restarts and retries follow the instance's policy. A notifier's failures are
// kept in its log and never raise alerts.
package notification

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/bus"
	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/rowqueue"
)

// ModuleName keys the module's runtime.
const ModuleName = "notification"

// ChangedSubject announces changed notification rows for live pages.
const ChangedSubject = alert.ChangedSubject

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
			Type:      persistence.PluginNotificationWebhook,
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

// Intervals of the runtime's background work.
const (
	summaryInterval   = 5 * time.Second
	retentionInterval = time.Hour
)

// Runtime is the module's part of a process: it hears alerts, queues them for the
// notifier instances running here, sends the summaries of held alerts and trims the log.
type Runtime struct {
	core module.Core
	db   module.SQL
	q    *rowqueue.Queue
	log  *slog.Logger
	// now is the clock of rules and records; tests move it.
	now func() time.Time

	// held are the alerts heard that could not be recorded yet (the database was out of
	// reach), oldest first; see hear.
	held heldAlerts

	mu        sync.Mutex
	instances map[string]*Notifier
	unsub     func()
	quit      chan struct{}
	done      chan struct{}
	full      bool // the loop runs the summaries and the retention, not only retries
}

// New returns the runtime over the core's database and bus.
func New(core module.Core) *Runtime {
	logger := core.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rt := &Runtime{core: core, db: core.DB, log: logger.With("component", "notifications"), now: time.Now,
		instances: map[string]*Notifier{}}
	rt.q = &rowqueue.Queue{DB: core.DB, Table: "notifications", Announce: rt.announce}
	return rt
}

func (rt *Runtime) clock() time.Time { return rt.now().UTC() }

// Start listens for alerts on the bus and runs the summaries and the retention.
func (rt *Runtime) Start(ctx context.Context) error {
	if err := rt.subscribe(); err != nil {
		return err
	}
	rt.startLoop(true)
	return nil
}

// Listen only listens for alerts on the bus, for the notifier instances this process
// runs, and keeps retrying the alerts the database did not take: a plugin process of a
// distributed installation hears alerts without running the summaries and the retention,
// which the API process runs. Listening twice is listening once.
func (rt *Runtime) Listen() error {
	if err := rt.subscribe(); err != nil {
		return err
	}
	rt.startLoop(false)
	return nil
}

func (rt *Runtime) subscribe() error {
	if rt.core.Bus != nil && rt.unsub == nil {
		unsub, err := rt.core.Bus.Subscribe(alert.BusSubject, func(_ string, data []byte) {
			a, err := alert.Decode(data)
			if err != nil {
				rt.log.Warn("alert from the bus refused", "err", err)
				return
			}
			rt.hear(context.Background(), a)
		})
		if err != nil {
			return fmt.Errorf("notifications: listen for alerts: %w", err)
		}
		rt.unsub = unsub
	}
	return nil
}

// startLoop starts the background work once: the retries of held alerts always, the
// summaries and the retention when full; a full start replaces a loop that only retries.
func (rt *Runtime) startLoop(full bool) {
	if rt.quit != nil {
		if rt.full || !full {
			return
		}
		close(rt.quit)
		<-rt.done
	}
	rt.quit, rt.done, rt.full = make(chan struct{}), make(chan struct{}), full
	go rt.run(full)
}

// Stop ends the listening and the background work.
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
	rt.recordHeld(ctx)
	if n := rt.Held(); n > 0 {
		rt.log.Error("alerts lost at shutdown: the database did not take them", "alerts", n)
	}
	return nil
}

func (rt *Runtime) run(full bool) {
	defer close(rt.done)
	var summaries <-chan time.Time // nil, so never ready, unless full
	if full {
		t := time.NewTicker(summaryInterval)
		defer t.Stop()
		summaries = t.C
	}
	retry := time.NewTicker(heldRetryInterval)
	defer retry.Stop()
	lastRetention := time.Time{}
	for {
		select {
		case <-summaries:
		case <-retry.C:
			rt.recordHeld(context.Background())
			continue
		case <-rt.quit:
			return
		}
		ctx := context.Background()
		rt.recordHeld(ctx)
		if err := rt.Summarize(ctx); err != nil {
			rt.log.Error("send summaries of held alerts", "err", err)
		}
		if time.Since(lastRetention) >= retentionInterval {
			lastRetention = time.Now()
			if n, err := rt.Retain(ctx); err != nil {
				rt.log.Error("trim the notification log", "err", err)
			} else if n > 0 {
				rt.log.Info("notification log trimmed", "rows", n)
			}
		}
	}
}

// register makes a notifier instance known to the rules; a restarted instance replaces
// its earlier self.
func (rt *Runtime) register(n *Notifier) {
	rt.mu.Lock()
	rt.instances[n.name] = n
	rt.mu.Unlock()
}

// running lists the notifier instances of this process whose records are enabled now (a
// stopped or disabled instance is left out, and one in another process is its own
// process's business).
func (rt *Runtime) running(ctx context.Context) (map[string]*Notifier, error) {
	rt.mu.Lock()
	mine := maps.Clone(rt.instances)
	rt.mu.Unlock()
	if len(mine) == 0 {
		return nil, nil
	}
	recs, err := rt.core.Store.ListPluginConfigs(ctx, persistence.PluginNotificationWebhook)
	if err != nil {
		return nil, fmt.Errorf("list notifier instances: %w", err)
	}
	out := map[string]*Notifier{}
	for _, r := range recs {
		if n, ok := mine[string(r.Name)]; ok && r.Enabled {
			out[string(r.Name)] = n
		}
	}
	return out, nil
}

// Accept records an alert once, and queues, holds or suppresses it for each running
// notifier instance whose filters it passes, in one transaction. Hearing an alert again
// changes nothing.
func (rt *Runtime) Accept(ctx context.Context, a alert.Alert) error {
	now := rt.clock()
	if err := a.Normalize(now); err != nil {
		return err
	}
	if a.Resolves {
		return rt.resolve(ctx, a)
	}
	insts, err := rt.running(ctx)
	if err != nil {
		return err
	}
	var woken []string
	var changed []int64
	err = rt.db.Write(ctx, func(tx module.Tx) error {
		woken, changed = woken[:0], changed[:0]
		// Every process on the bus hears the alert: the first records it, and each queues
		// it for the instances it runs; a row per alert and instance is made once.
		if _, err := insertAlert(ctx, tx, a); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(insts)) {
			n := insts[name]
			if a.Instance != "" && a.Instance != name {
				continue
			}
			if a.Code == alert.AlertsHeld || !n.cfg.passes(a) {
				continue
			}
			state, reason, err := decide(ctx, tx, n.cfg, name, a, now)
			if err != nil {
				return err
			}
			id, err := insertRow(ctx, tx, a, name, kindAlert, state, reason, now)
			if err != nil {
				return err
			}
			if id != 0 {
				changed = append(changed, id)
			}
			if state == StateQueued {
				woken = append(woken, name)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("accept alert %s: %w", a.ID, err)
	}
	rt.wake(woken)
	rt.announce(changed)
	return nil
}

// Summarize sends, for every running instance, one summary of the alerts its rate limit
// held once the oldest of them has waited a whole window.
func (rt *Runtime) Summarize(ctx context.Context) error {
	insts, err := rt.running(ctx)
	if err != nil {
		return err
	}
	now := rt.clock()
	for _, name := range slices.Sorted(maps.Keys(insts)) {
		window := time.Duration(insts[name].cfg.RateWindow)
		var sent int64
		err := rt.db.Write(ctx, func(tx module.Tx) error {
			sent = 0
			a, ids, ok, err := heldSummary(ctx, tx, name, window, now)
			if err != nil || !ok {
				return err
			}
			if _, err := insertAlert(ctx, tx, a); err != nil {
				return err
			}
			id, err := insertRow(ctx, tx, a, name, kindSummary, StateQueued, "", now)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE notifications SET summary_id = ?, updated_at = ? WHERE id IN (`+idList(ids)+`)`,
				id, tx.Time(now)); err != nil {
				return fmt.Errorf("mark held notifications summed up: %w", err)
			}
			sent = id
			return nil
		})
		if err != nil {
			return fmt.Errorf("summary of %s: %w", name, err)
		}
		if sent != 0 {
			rt.wake([]string{name})
			rt.announce([]int64{sent})
		}
	}
	return nil
}

// Retain deletes finished rows older than RetentionAge, then the oldest finished rows
// beyond RetentionRows, then alerts no row names that are older than RetentionAge.
func (rt *Runtime) Retain(ctx context.Context) (int64, error) {
	var total int64
	now := rt.clock()
	err := rt.db.Write(ctx, func(tx module.Tx) error {
		total = 0
		const finished = `state IN ('delivered', 'failed', 'suppressed') OR (state = 'held' AND summary_id IS NOT NULL)`
		res, err := tx.Exec(ctx, `DELETE FROM notifications WHERE created_at < ? AND (`+finished+`)`, tx.Time(now.Add(-RetentionAge)))
		if err != nil {
			return fmt.Errorf("delete old notifications: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
		var cut int64
		err = tx.QueryRow(ctx, `SELECT id FROM notifications ORDER BY id DESC LIMIT 1 OFFSET ?`, RetentionRows).Scan(&cut)
		if err == nil {
			res, err := tx.Exec(ctx, `DELETE FROM notifications WHERE id <= ? AND (`+finished+`)`, cut)
			if err != nil {
				return fmt.Errorf("delete notifications beyond %d: %w", RetentionRows, err)
			}
			n, _ := res.RowsAffected()
			total += n
		}
		res, err = tx.Exec(ctx, `DELETE FROM alerts WHERE raised_at < ? AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.alert_id = alerts.id)`,
			tx.Time(now.Add(-RetentionAge)))
		if err != nil {
			return fmt.Errorf("delete old alerts: %w", err)
		}
		n, _ = res.RowsAffected()
		total += n
		return nil
	})
	return total, err
}

// wake tells the instances' workers that rows are due.
func (rt *Runtime) wake(names []string) {
	bus.WakeTargets(rt.core.Bus, names)
}

// announce publishes changed rows for live pages; lossy like every bus event.
func (rt *Runtime) announce(ids []int64) {
	if rt.core.Bus == nil || len(ids) == 0 {
		return
	}
	b, _ := json.Marshal(map[string][]int64{"ids": ids})
	_ = rt.core.Bus.Publish(ChangedSubject, b)
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
		return nil, fmt.Errorf("notification-webhook %s: config is %T, want *Config", name, cfg)
	}
	n, err := newNotifier(rt, string(name), c)
	if err != nil {
		return nil, err
	}
	rt.register(n)
	return n, nil
}
