package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"wharf/internal/bus"
	"wharf/internal/config"
	"wharf/internal/persistence"
	"wharf/internal/probe"
)

// Roles are what one process of an installation runs. A standalone process runs them
// all; `wharf serve api|plugin|sweeper` runs one.
type Roles struct {
	// API serves REST and the web UI, seeds a new database and runs the modules'
	// background work (notifications).
	API bool
	// Plugins runs plugin instances: every enabled one, or, with PluginType set, the
	// enabled instances of that type (only PluginName when it is set too).
	Plugins    bool
	PluginType persistence.PluginType
	PluginName persistence.InstanceName
	// Sweeper runs the sweep while the process holds the sweep lock.
	Sweeper bool
}

// Standalone is every role in one process.
func Standalone() Roles { return Roles{API: true, Plugins: true, Sweeper: true} }

// Names are the roles as the process's log and heartbeat name them.
func (r Roles) Names() []string {
	var out []string
	if r.API {
		out = append(out, "api")
	}
	if r.Plugins {
		name := "plugin"
		if r.PluginType != "" {
			name += ":" + string(r.PluginType)
			if r.PluginName != "" {
				name += "/" + string(r.PluginName)
			}
		}
		out = append(out, name)
	}
	if r.Sweeper {
		out = append(out, "sweeper")
	}
	return out
}

// readinessRoles are the roles /readyz waits for.
func (r Roles) readinessRoles() []string {
	out := []string{RoleEngine}
	if r.Plugins {
		out = append(out, RolePlugins)
	}
	if r.Sweeper {
		out = append(out, RoleSweeper)
	}
	return out
}

// checkBus refuses combinations of database and bus that cannot work: an external bus
// joins processes that share one database, which SQLite cannot be.
func checkBus(cfg config.Config) error {
	if cfg.NATSURL == "" {
		return nil
	}
	if !cfg.IsPostgres() {
		return fmt.Errorf("an external bus (--nats, WHARF_NATS_URL) needs WHARF_DB_URL=postgres://…: SQLite serves one process only")
	}
	if cfg.NATSListen != "" {
		return fmt.Errorf("--nats-listen (WHARF_NATS_LISTEN) opens the embedded bus, which --nats (WHARF_NATS_URL) replaces: set only one")
	}
	return nil
}

// openBus connects to the external bus when one is configured and starts the embedded
// one otherwise.
func openBus(ctx context.Context, cfg config.Config, log *slog.Logger) (*bus.Bus, error) {
	if cfg.NATSURL == "" {
		b, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{ListenAddr: cfg.NATSListen, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("start the internal bus: %w", err)
		}
		return b, nil
	}
	a := cfg.NATS
	b, err := bus.Connect(ctx, cfg.NATSURL, log, bus.Auth{CredsFile: a.CredsFile, User: a.User, Password: a.Password,
		Token: a.Token, TLSCA: a.TLSCA, TLSCert: a.TLSCert, TLSKey: a.TLSKey})
	if err != nil {
		return nil, withFix(err, "check --nats (WHARF_NATS_URL), that the NATS servers run and are reachable, and the WHARF_NATS_* credentials")
	}
	return b, nil
}

// listen binds the process's HTTP address: the API and UI address for the API role,
// else the probe address.
func (g *Gateway) listen(cfg config.Config) (net.Listener, error) {
	if g.roles.API {
		return listenHTTP(cfg.HTTPAddr)
	}
	if cfg.ProbeAddr == "" {
		return nil, fmt.Errorf("a plugin or sweeper process serves /healthz, /readyz and /metrics on an address of its own: set --listen (WHARF_PROBE_ADDR)")
	}
	ln, err := net.Listen("tcp", cfg.ProbeAddr)
	if err != nil {
		return nil, withFix(fmt.Errorf("listen on %s: %w", cfg.ProbeAddr, err),
			"choose a free address of this host with --listen (WHARF_PROBE_ADDR)")
	}
	return ln, nil
}

// probeHandler is what a process without the API role serves on its own address.
func (g *Gateway) probeHandler() http.Handler {
	return probe.Handler(g.Health, g.Metrics.Handler(g.cfg.MetricsToken))
}

// startPlugins starts the plugin instances the process runs: every enabled one in
// standalone, the selected type's in a plugin process, none in an API or sweeper process.
func (g *Gateway) startPlugins(ctx context.Context) error {
	if !g.roles.Plugins {
		return nil
	}
	var err error
	if g.roles.PluginType == "" {
		err = g.Services.StartAll(ctx)
	} else {
		err = g.Services.StartSelected(ctx, g.roles.PluginType, g.roles.PluginName)
	}
	if err != nil {
		return err
	}
	g.Health.Started(RolePlugins)
	return nil
}

// serveProbe answers /healthz, /readyz and /metrics on ln in a process without the API.
func (g *Gateway) serveProbe(ln net.Listener) {
	g.server = newHTTPServer(g.probeHandler(), g.productName)
	g.serveErr = make(chan error, 1)
	go func() {
		if err := g.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.serveErr <- err
		}
		close(g.serveErr)
	}()
	g.log.Info("wharf is running", "roles", strings.Join(g.roles.Names(), ","), "probe", "http://"+ln.Addr().String(),
		"database", g.Store.Dialect())
}
