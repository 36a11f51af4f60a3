// Package gateway assembles a Wharf process: database, payload storage, bus, dispatcher,
// delivery engine, sweep, plugin instances and the HTTP server, with one start-up and
// one shutdown order.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/api"
	"wharf/internal/audit"
	"wharf/internal/auth/oidc"
	"wharf/internal/bus"
	"wharf/internal/callbacks"
	"wharf/internal/certs"
	"wharf/internal/config"
	"wharf/internal/delivery"
	"wharf/internal/dispatch"
	"wharf/internal/erasure"
	"wharf/internal/httproute"
	"wharf/internal/logging"
	"wharf/internal/metrics"
	"wharf/internal/module"
	"wharf/internal/persistence/db"
	"wharf/internal/product"
	"wharf/internal/retention"
	"wharf/internal/secret"
	"wharf/internal/services"
	"wharf/internal/settings"
	"wharf/internal/storage"
	"wharf/internal/telemetry"
	"wharf/internal/ui"
	"wharf/internal/ui/session"
)

// Gateway is one standalone Wharf process.
type Gateway struct {
	cfg        config.Config
	log        *slog.Logger
	Store      *db.Store
	Blobs      *storage.Stores
	Bus        *bus.Bus
	Box        *secret.Box
	Dispatcher *dispatch.Dispatcher
	Engine     *delivery.Engine
	Sweeper    *delivery.Sweeper
	// Retention prunes payloads and history past their retention (sweeper role).
	Retention *retention.Job
	// Certs checks certificate expiry hourly and raises alerts.
	Certs *certs.Monitor
	// Alerts takes the alerts of this process and hands them to the bus.
	Alerts   *alert.Queue
	Services *services.Manager
	// Health pings the database and the bus, answers /readyz and raises
	// database_unavailable.
	Health *Health
	// Runtimes are the modules' shared parts by module name (module.Module.Setup).
	Runtimes map[string]any
	// UI is the web UI under /ui/.
	UI *ui.Server
	// Notifications is the notifier module's log and alerts (alert.Log), nil in a build
	// without the module; the web UI's Notifications page and dashboard card read it.
	Notifications alert.Log
	// OIDC signs users in through identity providers and verifies their access tokens.
	OIDC *oidc.Manager
	// Metrics is the process's Prometheus registry, served at /metrics.
	Metrics *metrics.Registry
	// Telemetry exports traces and logs over OTLP when OTEL_* asks for it (telemetry.go).
	Telemetry *telemetry.Telemetry
	// Erasure erases messages' content for operators (erasure.go).
	Erasure *erasure.Service

	roles     Roles
	sweepLock *sweepLock
	holder    string // the process's id, kept across restarts in its data directory
	// unfollowConfig ends the subscription to other processes' configuration changes.
	unfollowConfig func()
	heartbeat      *heartbeat
	logs           *logging.Ring // the process's newest log records (remote_logs.go)
	logsSrv        *logsServer

	server   *http.Server
	listener net.Listener
	serveErr chan error
	stopOnce sync.Once

	// callbackSpool holds accepted status callbacks until the store applied them.
	callbackSpool *callbacks.Spool

	// storageRunning is the payload storage settings the process started with.
	storageRunning map[string]string

	setMu    sync.Mutex
	setCache settings.Values
	setAt    time.Time
	setRead  bool // setCache was read from the database
}

// Open prepares everything a standalone process runs, without starting work yet.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Gateway, error) {
	return OpenRoles(ctx, cfg, log, Standalone())
}

// OpenRoles prepares a process that runs roles, without starting work yet.
func OpenRoles(ctx context.Context, cfg config.Config, log *slog.Logger, roles Roles) (g *Gateway, err error) {
	// The web UI's logs page tails the process's own records: the ring takes what the
	// process logs, at the same level.
	logs := logging.NewRing(logRingSize, cfg.LogLevel)
	tel, log, err := openTelemetry(ctx, cfg, log, logs)
	if err != nil {
		return nil, err
	}
	g = &Gateway{cfg: cfg, log: log, Telemetry: tel, roles: roles, logs: logs}
	// The named result is nil on an error return; the clean-up needs what was built.
	built := g
	defer func() {
		if err != nil {
			built.closeResources()
		}
	}()
	// What is local and cheap is checked first (data directory, address, key files), so
	// a mistake there is reported before the database is touched.
	if err := checkBus(cfg); err != nil {
		return nil, err
	}
	if err := prepareDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if g.listener, err = g.listen(cfg); err != nil {
		return nil, err
	}
	box, created, err := secret.LoadOrCreate(cfg.SecretsKeyPath(), log)
	if err != nil {
		return nil, withFix(err, fixSecretsKey)
	}
	g.Box = box
	auditKey, err := audit.LoadOrCreateKey(cfg.AuditKeyPath(), log)
	if err != nil {
		return nil, withFix(err, fixAuditKey)
	}
	sessionKey, _, err := session.LoadOrCreateKey(cfg.SessionKeyPath(), log)
	if err != nil {
		return nil, withFix(err, fixSessionKey)
	}
	var schemas []db.ModuleSchema
	for _, m := range module.Modules() {
		if m.Schema != nil {
			schemas = append(schemas, db.ModuleSchema{Name: m.Name, FS: m.Schema})
		}
	}
	// An unreachable bus is found before the database is touched.
	if g.Bus, err = openBus(ctx, cfg, log.With("component", "bus")); err != nil {
		return nil, err
	}
	holder, err := loadOrCreateHolder(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	g.holder = holder
	g.Store, err = db.Open(ctx, db.Options{URL: cfg.DBURL, SQLitePath: cfg.SQLitePath(), Logger: log, Modules: schemas,
		AuditKey: auditKey, Holder: holder})
	if err != nil {
		return nil, dbFix(err, cfg)
	}
	if err := checkSecretsKey(ctx, g.Store, box, cfg.SecretsKeyPath(), created); err != nil {
		return nil, err
	}
	if err := g.releasePreviousClaims(ctx); err != nil {
		return nil, err
	}
	// The API process seeds a new database; the others start after it (see
	// docs/deployment.md) and find it seeded.
	if roles.API {
		seeded, err := seed(ctx, g.Store, cfg, box)
		if err != nil {
			return nil, err
		}
		if seeded {
			log.Info("new database seeded", "organization", "local")
		}
	}
	g.Blobs, g.storageRunning, err = openPayloadStores(ctx, g.Store, cfg.PayloadsDir(), filepath.Join(cfg.DataDir, "tmp", "s3cache"))
	if err != nil {
		return nil, err
	}
	g.Metrics = g.newMetrics()
	// Every commit that wrote a message's history is announced on the bus for live views.
	g.Store.OnHistory(busSignals{bus: g.Bus, log: log}.Announce)
	g.Store.OnPluginChange(busSignals{bus: g.Bus, log: log}.PluginsChanged)
	if err := g.followConfigChanges(); err != nil {
		return nil, err
	}
	sig := busSignals{bus: g.Bus, log: log}
	g.Dispatcher = dispatch.New(g.Store, g.Blobs, sig, log.With("component", "dispatch"))
	g.Engine = delivery.NewEngine(g.Store, g.Blobs, sig, log, delivery.Config{
		Lease:   func() time.Duration { return g.settings(context.Background()).LeaseDuration },
		Metrics: g.Metrics,
		Tracer:  tel.Tracer(),
	})
	g.traceDispatch()
	g.Sweeper = delivery.NewSweeper(g.Store, sig, log, func(ctx context.Context) delivery.SweepSettings {
		s := g.settings(ctx)
		return delivery.SweepSettings{Interval: s.SweepInterval, Wakeups: s.WakeupPolicy()}
	})
	g.Sweeper.Metrics = g.Metrics
	g.sweepLock = &sweepLock{store: g.Store, log: log.With("component", "sweep")}
	g.Sweeper.Active = g.sweepLock.Active
	g.Retention = g.newRetention()
	g.Certs = certs.NewMonitor(g.Store, log.With("component", "certificates"))
	g.Alerts = g.newAlerts(log)
	baseURL, err := cfg.BaseURL()
	if err != nil {
		return nil, err
	}
	core := module.Core{
		Logger:  log,
		DataDir: cfg.DataDir,
		BaseURL: baseURL,
		Store:   g.Store,
		DB:      g.Store.ModuleSQL(),
		Blobs:   g.Blobs,
		Certs:   certs.NewOpener(g.Store, box),
		Sealer:  box,
		Ingest:  g.Dispatcher,
		Alerts:  g.Alerts,
		Bus:     moduleBus{g.Bus},
		Inbound: g.Metrics,
		Product: g.productName,
		// Telemetry traces the modules' listeners and outgoing requests.
		Telemetry: tel,
	}
	g.Runtimes = map[string]any{}
	for _, m := range module.Modules() {
		if m.Setup == nil {
			continue
		}
		rt, err := m.Setup(ctx, core)
		if err != nil {
			return nil, fmt.Errorf("set up module %s: %w", m.Name, err)
		}
		g.Runtimes[m.Name] = rt
		if l, ok := rt.(alert.Log); ok {
			g.Notifications = l
		}
	}
	g.Erasure = g.newErasure()
	g.Services = services.New(g.Store, box, g.Engine, module.Env{Logger: log, DataDir: cfg.DataDir, Ingest: g.Dispatcher, Runtimes: g.Runtimes, Alerts: g.Alerts, Product: g.productName,
		Telemetry: tel})
	g.Health = newHealth(g.Store.Ping, g.Bus.Flush, g.Alerts,
		func() time.Duration { return g.settings(context.Background()).HealthCheckInterval }, log)
	g.Health.metrics = g.Metrics
	g.Health.Expect(roles.readinessRoles()...)
	g.Services.SetHealth(g.Health.Down)
	sessions, err := session.NewManager(session.Config{
		Key:             sessionKey,
		Secure:          strings.HasPrefix(baseURL, "https://"),
		IdleTimeout:     sessionIdle,
		AbsoluteTimeout: sessionAbsolute,
		Store:           g.Store,
		Logger:          log.With("component", "ui"),
	})
	if err != nil {
		return nil, err
	}
	g.OIDC = oidc.New(oidc.Config{Store: g.Store, Secrets: box, Logger: log.With("component", "oidc")})
	g.UI, err = ui.New(ui.Deps{Store: g.Store, Sessions: sessions, Sealer: box, Logger: log.With("component", "ui"), Issuer: "Wharf",
		Actions: ops{g}, DeadLetters: ops{g}, Payloads: g.Blobs, PartyReferences: g.partyReferences(), Services: g.serviceControl(), Processes: g.Store,
		Ingest: g.Dispatcher, SettingsChanged: ops{g}.SettingsChanged, PublicURL: baseURL,
		Events: busSignals{bus: g.Bus, log: log}, Logs: logs, ProcessLogs: processLogs{g}, Panels: g.messagePanels(),
		PartyPanels: g.partyPanels(), Indexes: g.messageIndexes(), Facters: g.messageFacters(), OIDC: g.OIDC,
		Notifications: g.Notifications, NotificationEvents: busSignals{bus: g.Bus, log: log}, EventWebhooks: g.eventWebhooks(),
		Storage: g, Erasure: g.Erasure})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// A web UI session ends after sessionIdle without a request, and sessionAbsolute after
// sign-in whatever its use.
const (
	sessionIdle     = 2 * time.Hour
	sessionAbsolute = 12 * time.Hour
)

// logRingSize is how many of the newest log records the web UI's logs page can show.
const logRingSize = 1000

// settingsTTL bounds how stale the cached settings may be; a change applies within it.
const settingsTTL = time.Second

// settings returns the current settings, read at most once per settingsTTL; a read
// failure (the database is out of reach) keeps the settings read last, or falls back to
// the defaults, which are always valid, when none were read yet.
func (g *Gateway) settings(ctx context.Context) settings.Values {
	g.setMu.Lock()
	defer g.setMu.Unlock()
	if !g.setAt.IsZero() && time.Since(g.setAt) < settingsTTL {
		return g.setCache
	}
	v, err := g.readSettings(ctx)
	if err != nil && g.setRead {
		// The database is out of reach: the settings read last still hold.
		g.setAt = time.Now()
		return g.setCache
	}
	g.setCache, g.setAt, g.setRead = v, time.Now(), err == nil
	return g.setCache
}

// productName is the product string Wharf sends, per the hide_version setting.
func (g *Gateway) productName() string {
	return product.String(g.settings(context.Background()).HideVersion)
}

// settingsChanged drops the cached settings so a change applies to the next reader.
func (g *Gateway) settingsChanged() {
	g.setMu.Lock()
	g.setAt = time.Time{}
	g.setMu.Unlock()
}

// readSettings reads the stored settings; it returns the defaults with the error of a
// failed read.
func (g *Gateway) readSettings(ctx context.Context) (settings.Values, error) {
	stored, err := g.Store.ListSettings(ctx)
	if err == nil {
		// The store keeps bookkeeping entries beside the catalogue; only the catalogue's
		// keys are settings.
		m := map[string]string{}
		for _, k := range settings.Keys() {
			if v, ok := stored[k]; ok {
				m[k] = v
			}
		}
		if v, err := settings.Parse(m); err == nil {
			return v, nil
		} else {
			g.log.Error("stored settings are invalid; using defaults", "err", err)
		}
	} else {
		g.log.Warn("read settings", "err", err)
	}
	v, _ := settings.Parse(nil)
	return v, err
}

// Start begins work: the delivery engine, every enabled plugin instance, the sweep, the
// certificate expiry check and the HTTP server.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.Alerts.Start(ctx); err != nil {
		return err
	}
	if err := g.Health.Start(ctx); err != nil {
		return err
	}
	if err := g.Engine.Start(ctx); err != nil {
		return err
	}
	g.Health.Started(RoleEngine)
	g.startHeartbeat(ctx)
	if g.roles.API {
		for _, name := range g.runtimeNames() {
			if st, ok := g.Runtimes[name].(module.Stopper); ok {
				if err := st.Start(ctx); err != nil {
					return fmt.Errorf("start module %s: %w", name, err)
				}
			}
		}
	}
	if err := g.listenForAlerts(); err != nil {
		return err
	}
	if err := g.startPlugins(ctx); err != nil {
		return err
	}
	if g.roles.Plugins {
		if err := g.serveServiceControl(); err != nil {
			return err
		}
	}
	logsSrv, err := g.serveLogs()
	if err != nil {
		return err
	}
	g.logsSrv = logsSrv
	if g.roles.Sweeper {
		if err := g.Sweeper.Start(ctx); err != nil {
			return err
		}
		if err := g.Retention.Start(ctx); err != nil {
			return err
		}
		g.Health.Started(RoleSweeper)
	}
	// Open bound the address, so a taken one stopped the start before anything ran.
	ln := g.listener
	if !g.roles.API {
		g.serveProbe(ln)
		return nil
	}
	if err := g.Certs.Start(ctx); err != nil {
		return err
	}
	// The erasures a crash interrupted are finished before the API takes new ones.
	if err := g.Erasure.Start(ctx); err != nil {
		return err
	}
	stream, closeStream, err := g.eventStream()
	if err != nil {
		return err
	}
	cbs, err := g.startCallbacks()
	if err != nil {
		closeStream()
		return err
	}
	srv := api.New(api.Deps{
		Events:    stream,
		Store:     g.Store,
		Payloads:  g.Blobs,
		Ingest:    g.Dispatcher,
		Ops:       ops{g},
		Sealer:    g.Box,
		Logger:    g.log.With("component", "api"),
		Version:   product.Version(),
		Modules:   g.moduleAPIs(),
		OIDC:      g.OIDC,
		Health:    g.Health,
		Storage:   g,
		Erasure:   g.Erasure,
		Callbacks: cbs,
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", g.UI.Handler())
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
	mux.Handle("/", srv.Handler())
	mux.Handle("GET /metrics", g.Metrics.Handler(g.cfg.MetricsToken))
	g.server = newHTTPServer(g.Telemetry.Handler(g.Metrics.Instrument(httproute.Note(mux)), ""), g.productName)
	g.server.RegisterOnShutdown(closeStream)
	// Shutdown waits for requests to finish; the UI's live streams finish only when told.
	g.server.RegisterOnShutdown(g.UI.Close)
	g.serveErr = make(chan error, 1)
	go func() {
		if err := g.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.serveErr <- err
		}
		close(g.serveErr)
	}()
	g.log.Info("wharf is running", "http", "http://"+ln.Addr().String(), "data_dir", g.cfg.DataDir, "database", g.Store.Dialect())
	return nil
}

// Addr is the HTTP server's address once started.
func (g *Gateway) Addr() string {
	if g.listener == nil {
		return ""
	}
	return g.listener.Addr().String()
}

// ServeErr reports a failure of the HTTP server.
func (g *Gateway) ServeErr() <-chan error { return g.serveErr }

// Shutdown stops in order: the HTTP server, the sources (nothing new comes in), the
// targets (drain within the configured bound, then release what was interrupted), the
// sweep and the certificate check, the alert queue (what it holds goes out), the modules'
// background work, then the bus and the database.
func (g *Gateway) Shutdown(ctx context.Context) error {
	var errs []error
	g.stopOnce.Do(func() {
		drain := g.settings(ctx).ShutdownDrainTimeout
		if g.Health != nil {
			g.Health.Stopping()
		}
		if g.server != nil {
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			errs = append(errs, g.server.Shutdown(hctx))
			cancel()
		}
		errs = append(errs, g.stopCallbacks(ctx))
		if g.Services != nil {
			errs = append(errs, g.Services.StopRole(ctx, module.RoleSource))
		}
		if g.Engine != nil {
			dctx, cancel := context.WithTimeout(ctx, drain)
			errs = append(errs, g.Engine.Stop(dctx))
			cancel()
		}
		if g.Sweeper != nil {
			errs = append(errs, g.Sweeper.Stop(ctx))
		}
		if g.Retention != nil {
			errs = append(errs, g.Retention.Stop(ctx))
		}
		if g.sweepLock != nil {
			g.sweepLock.Release(ctx)
		}
		if g.Certs != nil {
			errs = append(errs, g.Certs.Stop(ctx))
		}
		if g.Erasure != nil {
			errs = append(errs, g.Erasure.Stop(ctx))
		}
		if g.Health != nil {
			errs = append(errs, g.Health.Stop(ctx))
		}
		g.heartbeat.stop()
		if g.logsSrv != nil {
			g.logsSrv.Close()
		}
		// The alerts raised so far go out on the bus while the modules still listen.
		if g.Alerts != nil {
			errs = append(errs, g.Alerts.Stop(ctx))
		}
		for _, name := range g.runtimeNames() {
			if st, ok := g.Runtimes[name].(module.Stopper); ok {
				errs = append(errs, st.Stop(ctx))
			}
		}
		g.closeResources()
	})
	return errors.Join(errs...)
}

// runtimeNames lists the modules with a runtime, in registration order.
func (g *Gateway) runtimeNames() []string {
	var out []string
	for _, m := range module.Modules() {
		if _, ok := g.Runtimes[m.Name]; ok {
			out = append(out, m.Name)
		}
	}
	return out
}

// partyReferences are the module runtimes whose records keep parties from deletion.
func (g *Gateway) partyReferences() []module.PartyReferences {
	var out []module.PartyReferences
	for _, name := range g.runtimeNames() {
		if p, ok := g.Runtimes[name].(module.PartyReferences); ok {
			out = append(out, p)
		}
	}
	return out
}

// messagePanels are the module runtimes that show a part of a message's detail.
func (g *Gateway) messagePanels() map[string]module.MessagePanels {
	out := map[string]module.MessagePanels{}
	for _, name := range g.runtimeNames() {
		if p, ok := g.Runtimes[name].(module.MessagePanels); ok {
			out[name] = p
		}
	}
	return out
}

// partyPanels are the module runtimes with a part of a party's page in the web UI.
func (g *Gateway) partyPanels() []module.PartyPanels {
	var out []module.PartyPanels
	for _, name := range g.runtimeNames() {
		if p, ok := g.Runtimes[name].(module.PartyPanels); ok {
			out = append(out, p)
		}
	}
	return out
}

// moduleAPIs collects what each module adds to the REST API.
func (g *Gateway) moduleAPIs() []api.ModuleAPI {
	var out []api.ModuleAPI
	for _, m := range module.Modules() {
		ma := api.ModuleAPI{Name: m.Name, OpenAPI: m.OpenAPI}
		rt := g.Runtimes[m.Name]
		if p, ok := rt.(module.APIProvider); ok {
			ma.Routes = p.APIRoutes()
		}
		if p, ok := rt.(module.MessagePanels); ok {
			ma.Panels = p
		}
		if p, ok := rt.(module.PartyReferences); ok {
			ma.Parties = p
		}
		if len(ma.Routes) > 0 || len(ma.OpenAPI) > 0 || ma.Panels != nil || ma.Parties != nil {
			out = append(out, ma)
		}
	}
	return out
}

func (g *Gateway) closeResources() {
	// Before Start the listener is only held; after it, Shutdown has closed it already.
	if g.listener != nil && g.server == nil {
		g.listener.Close()
	}
	if g.unfollowConfig != nil {
		g.unfollowConfig() // before the store it tells closes
	}
	if g.Bus != nil {
		g.Bus.Close()
	}
	if g.Store != nil {
		if err := g.Store.Close(); err != nil {
			g.log.Error("close database", "err", err)
		}
	}
	g.flushTelemetry()
}
