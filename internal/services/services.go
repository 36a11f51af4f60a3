// Package services runs the configured plugin instances: sources as services, targets as
// workers of the delivery engine, each startable, stoppable and restartable on its own.
package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"wharf/internal/alert"
	"wharf/internal/audit"
	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// State is where a plugin instance stands.
type State string

const (
	StateRunning  State = "running"
	StateStopped  State = "stopped"
	StateFailed   State = "failed"
	StateDisabled State = "disabled"
	// StateDegraded is a running instance while something it depends on (the database,
	// the bus) is out of reach: it runs, but cannot do its work.
	StateDegraded State = "degraded"
)

// Status describes one instance.
type Status struct {
	Name    persistence.InstanceName
	Type    persistence.PluginType
	Role    module.Role
	Enabled bool
	State   State
	Error   string
	Since   time.Time
	// Addr is where a running source listens, for one that does (the AS2 receiver).
	Addr string
}

// listener is a source that listens on a network address.
type listener interface{ Addr() net.Addr }

// multiListener is a source that may listen on several addresses and describes each
// (the AS2 receiver on HTTP and HTTPS at once).
type multiListener interface{ Listening() []string }

// Store is what the manager needs of persistence.
type Store interface {
	ListPluginConfigs(ctx context.Context, typ persistence.PluginType) ([]persistence.PluginConfig, error)
	GetPluginConfig(ctx context.Context, name persistence.InstanceName) (persistence.PluginConfig, error)
	RecordAudit(ctx context.Context, action, kind, recordID, recordName string, changes []audit.Change) error
}

// Targets is the delivery engine's side of running targets.
type Targets interface {
	AddTarget(name persistence.InstanceName, d delivery.Deliverer, opts delivery.TargetOptions) error
	RemoveTarget(ctx context.Context, name persistence.InstanceName) error
}

// Manager owns the running instances.
type Manager struct {
	store   Store
	sealer  module.Sealer
	targets Targets
	env     module.Env
	log     *slog.Logger

	// down names what the process depends on and cannot reach now; see SetHealth.
	down atomic.Pointer[func() []string]

	mu        sync.Mutex
	instances map[persistence.InstanceName]*instance
}

type instance struct {
	typ     persistence.PluginType
	role    module.Role
	enabled bool
	state   State
	err     string
	since   time.Time
	source  module.Service
	// alerted says a plugin_failed alert of the instance is not resolved yet.
	alerted bool
}

// New returns a manager.
func New(store Store, sealer module.Sealer, targets Targets, env module.Env) *Manager {
	return &Manager{store: store, sealer: sealer, targets: targets, env: env, log: env.Logger.With("component", "services"), instances: map[persistence.InstanceName]*instance{}}
}

// StartAll starts every enabled instance. An instance that fails to start is marked
// failed and logged; the others run.
func (m *Manager) StartAll(ctx context.Context) error {
	recs, err := m.store.ListPluginConfigs(ctx, "")
	if err != nil {
		return fmt.Errorf("list plugin instances: %w", err)
	}
	for _, rec := range recs {
		if !rec.Enabled {
			m.set(rec.Name, rec.Type, false, StateDisabled, "", nil)
			continue
		}
		if err := m.startRecord(ctx, rec); err != nil {
			m.log.Error("plugin instance failed to start", "instance", string(rec.Name), "type", string(rec.Type), "err", err)
		}
	}
	return nil
}

// Start starts one instance from its stored config; the operator's action is audited.
func (m *Manager) Start(ctx context.Context, name persistence.InstanceName) error {
	return m.audited(ctx, "start", name, m.start)
}

// Stop stops one instance: a source stops taking documents, a target's worker drains.
// The operator's action is audited.
func (m *Manager) Stop(ctx context.Context, name persistence.InstanceName) error {
	return m.audited(ctx, "stop", name, m.stop)
}

// Restart stops the instance and starts it from its current stored config; the
// operator's action is audited once.
func (m *Manager) Restart(ctx context.Context, name persistence.InstanceName) error {
	return m.audited(ctx, "restart", name, func(ctx context.Context, name persistence.InstanceName) error {
		if err := m.stop(ctx, name); err != nil {
			return err
		}
		return m.start(ctx, name)
	})
}

// audited runs an operator's action on an instance and records it in the audit log with
// its outcome. The action has no transaction of its own, so the event follows it; a
// failure to record is logged and does not undo the action.
func (m *Manager) audited(ctx context.Context, action string, name persistence.InstanceName,
	fn func(context.Context, persistence.InstanceName) error) error {
	err := fn(ctx, name)
	if errors.Is(err, persistence.ErrNotFound) {
		return err // nothing was acted on
	}
	outcome := "done"
	if err != nil {
		outcome = "failed"
	}
	b, _ := json.Marshal(outcome) // a string always encodes
	if aerr := m.store.RecordAudit(ctx, action, "service", string(name), string(name),
		[]audit.Change{{Path: "outcome", New: b}}); aerr != nil {
		m.log.Error("record service action in the audit log", "instance", string(name), "action", action, "err", aerr)
	}
	return err
}

func (m *Manager) start(ctx context.Context, name persistence.InstanceName) error {
	rec, err := m.store.GetPluginConfig(ctx, name)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	m.mu.Lock()
	in := m.instances[name]
	running := in != nil && in.state == StateRunning
	m.mu.Unlock()
	if running {
		return nil
	}
	return m.startRecord(ctx, rec)
}

func (m *Manager) stop(ctx context.Context, name persistence.InstanceName) error {
	if _, err := m.store.GetPluginConfig(ctx, name); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	m.mu.Lock()
	in := m.instances[name]
	m.mu.Unlock()
	if in == nil || in.state != StateRunning {
		return nil
	}
	var err error
	if in.role == module.RoleSource {
		err = in.source.Stop(ctx)
	} else {
		err = m.targets.RemoveTarget(ctx, name)
	}
	m.set(name, in.typ, in.enabled, StateStopped, "", nil)
	if err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	m.log.Info("plugin instance stopped", "instance", string(name))
	return nil
}

// StopRole stops every running instance of a role; shutdown stops sources first so
// nothing new arrives while targets drain.
func (m *Manager) StopRole(ctx context.Context, role module.Role) error {
	m.mu.Lock()
	var names []persistence.InstanceName
	for n, in := range m.instances {
		if in.role == role && in.state == StateRunning {
			names = append(names, n)
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.stop(ctx, n) // shutdown, not an operator action
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SetHealth gives the manager what names the process's dependencies that are out of
// reach now (the gateway's health monitor); while any is, running instances read
// degraded.
func (m *Manager) SetHealth(down func() []string) { m.down.Store(&down) }

func (m *Manager) unreachable() []string {
	if fn := m.down.Load(); fn != nil {
		return (*fn)()
	}
	return nil
}

// List reports every configured instance. While the database is out of reach it reports
// the instances this process knows, from memory.
func (m *Manager) List(ctx context.Context) ([]Status, error) {
	down := m.unreachable()
	recs, err := m.store.ListPluginConfigs(ctx, "")
	if err != nil {
		if len(down) == 0 && !errors.Is(err, persistence.ErrUnavailable) {
			return nil, fmt.Errorf("list plugin instances: %w", err)
		}
		if len(down) == 0 {
			down = []string{"database"}
		}
		recs = m.known()
	}
	out := m.statuses(recs)
	if len(down) > 0 {
		why := strings.Join(down, " and ") + " unreachable"
		for i := range out {
			if out[i].State == StateRunning {
				out[i].State, out[i].Error = StateDegraded, why
			}
		}
	}
	return out, nil
}

// known lists the instances this process has started or tried to, as records.
func (m *Manager) known() []persistence.PluginConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]persistence.PluginConfig, 0, len(m.instances))
	for name, in := range m.instances {
		out = append(out, persistence.PluginConfig{Name: name, Type: in.typ, Enabled: in.enabled})
	}
	return out
}

func (m *Manager) statuses(recs []persistence.PluginConfig) []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, 0, len(recs))
	for _, rec := range recs {
		st := Status{Name: rec.Name, Type: rec.Type, Enabled: rec.Enabled, State: StateStopped}
		if p, ok := module.Lookup(rec.Type); ok {
			st.Role = p.Role
		}
		if !rec.Enabled {
			st.State = StateDisabled
		}
		if in := m.instances[rec.Name]; in != nil {
			st.State, st.Error, st.Since = in.state, in.err, in.since
			if ml, ok := in.source.(multiListener); ok && in.state == StateRunning {
				st.Addr = strings.Join(ml.Listening(), ", ")
			} else if l, ok := in.source.(listener); ok && in.state == StateRunning {
				if a := l.Addr(); a != nil {
					st.Addr = a.String()
				}
			}
			if in.state != StateRunning && !rec.Enabled {
				st.State = StateDisabled
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (m *Manager) startRecord(ctx context.Context, rec persistence.PluginConfig) error {
	in, err := module.Load(rec, m.sealer)
	if err != nil {
		m.set(rec.Name, rec.Type, rec.Enabled, StateFailed, err.Error(), nil)
		return err
	}
	p, _ := module.Lookup(rec.Type)
	env := m.env
	env.Logger = m.env.Logger.With("instance", string(rec.Name))
	switch p.Role {
	case module.RoleSource:
		svc, err := p.NewSource(env, rec.Name, in.Config)
		if err == nil {
			err = svc.Start(ctx)
		}
		if err != nil {
			m.set(rec.Name, rec.Type, rec.Enabled, StateFailed, err.Error(), nil)
			return fmt.Errorf("start source %s: %w", rec.Name, err)
		}
		m.set(rec.Name, rec.Type, rec.Enabled, StateRunning, "", svc)
	case module.RoleTarget:
		d, err := p.NewTarget(env, rec.Name, in.Config)
		if err == nil {
			var opts delivery.TargetOptions
			if tc, ok := in.Config.(delivery.TargetConfig); ok {
				opts = tc.Options()
			}
			err = m.targets.AddTarget(rec.Name, d, opts)
		}
		if err != nil {
			m.set(rec.Name, rec.Type, rec.Enabled, StateFailed, err.Error(), nil)
			return fmt.Errorf("start target %s: %w", rec.Name, err)
		}
		m.set(rec.Name, rec.Type, rec.Enabled, StateRunning, "", nil)
	}
	m.log.Info("plugin instance started", "instance", string(rec.Name), "type", string(rec.Type))
	return nil
}

func (m *Manager) set(name persistence.InstanceName, typ persistence.PluginType, enabled bool, st State, errText string, svc module.Service) {
	role := module.Role("")
	if p, ok := module.Lookup(typ); ok {
		role = p.Role
	}
	m.mu.Lock()
	prev := m.instances[name]
	in := &instance{typ: typ, role: role, enabled: enabled, state: st, err: errText, since: time.Now().UTC(), source: svc}
	if prev != nil {
		in.alerted = prev.alerted
	}
	m.instances[name] = in
	// A notifier that fails says nothing about itself: its alert would go through it.
	raise := st == StateFailed && (prev == nil || prev.state != StateFailed) && typ != persistence.PluginNotificationWebhook
	// An instance that runs resolves its plugin_failed alert: one raised in this process,
	// or, on its first start here, one a previous run left.
	resolve := st == StateRunning && (prev == nil || in.alerted) && typ != persistence.PluginNotificationWebhook
	in.alerted = (in.alerted || raise) && !resolve
	m.mu.Unlock()
	subject := alert.Subject{Kind: "plugin", ID: string(name), Name: string(name)}
	if resolve {
		m.env.Raiser().Raise(alert.Resolution(alert.PluginFailed, subject))
	}
	if raise {
		m.env.Raiser().Raise(alert.Alert{
			Code:    alert.PluginFailed,
			Subject: subject,
			Summary: fmt.Sprintf("Plugin instance %s (%s) failed", name, typ),
			Details: []alert.Detail{{Label: "Instance", Value: string(name)}, {Label: "Type", Value: string(typ)},
				{Label: "Error", Value: persistence.SanitizeReason(errText)}},
			Link: "/ui/services",
		})
	}
}
