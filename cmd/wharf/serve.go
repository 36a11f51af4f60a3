package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"wharf/internal/config"
	"wharf/internal/gateway"
	"wharf/internal/logging"
	"wharf/internal/persistence"
)

const serveUsage = `Usage:
  wharf serve api [flags]                 REST API and web UI
  wharf serve plugin TYPE [NAME] [flags]  the enabled instances of TYPE, or only NAME
  wharf serve sweeper [flags]             the sweep (one process active, others stand by)

Each needs --nats URL (WHARF_NATS_URL) and WHARF_DB_URL=postgres://…; credentials for
the bus come from WHARF_NATS_CREDS, WHARF_NATS_USER/WHARF_NATS_PASSWORD or
WHARF_NATS_TOKEN, TLS files from WHARF_NATS_TLS_CA, _CERT and _KEY. A plugin or sweeper
process serves /healthz, /readyz and /metrics on --listen (WHARF_PROBE_ADDR).
`

// runServe runs one role of a distributed installation.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, serveUsage)
		return fmt.Errorf("%w: serve needs a role: api, plugin or sweeper", errUsageShown)
	}
	role, rest := args[0], args[1:]
	var roles gateway.Roles
	flags := []string{"data-dir", "db-url", "nats", "log-level", "payload-dir"}
	switch role {
	case "api":
		roles.API = true
		flags = append(flags, "http-addr", "public-url")
	case "plugin":
		roles.Plugins = true
		// A plugin's listeners and links (an AS2 receiver's MDN URL) use the public URL.
		flags = append(flags, "listen", "public-url")
	case "sweeper":
		roles.Sweeper = true
		flags = append(flags, "listen")
	default:
		fmt.Fprint(stderr, serveUsage)
		return fmt.Errorf("%w: serve: unknown role %q (api, plugin or sweeper)", errUsageShown, role)
	}
	cfg, pos, err := loadConfig("serve "+role, rest, flags...)
	if err != nil {
		return err
	}
	switch {
	case role == "plugin" && (len(pos) < 1 || len(pos) > 2):
		fmt.Fprint(stderr, serveUsage)
		return fmt.Errorf("%w: serve plugin takes TYPE and an optional NAME", errUsageShown)
	case role == "plugin":
		roles.PluginType = persistence.PluginType(pos[0])
		if len(pos) == 2 {
			roles.PluginName = persistence.InstanceName(pos[1])
		}
	case len(pos) > 0:
		return fmt.Errorf("%w: serve %s takes no arguments, got %q", errUsage, role, pos)
	}
	if err := checkDistributed(cfg); err != nil {
		return err
	}
	log := logging.New(stderr, cfg.LogLevel)
	setMemoryLimit(log)
	tuneGC()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g, err := gateway.OpenRoles(ctx, cfg, log, roles)
	if err != nil {
		return err
	}
	if err := g.Start(ctx); err != nil {
		_ = g.Shutdown(context.Background())
		return err
	}
	// The address line lets a supervisor (and the tests) find a port chosen by the system.
	fmt.Fprintf(stdout, "Listening on http://%s\n", g.Addr())
	return serveUntilSignal(ctx, stop, g, log)
}

// checkDistributed names what a role process lacks: the external bus and PostgreSQL.
func checkDistributed(cfg config.Config) error {
	var errs []error
	if cfg.NATSURL == "" {
		errs = append(errs, errors.New("set --nats (WHARF_NATS_URL) to the NATS cluster the processes share"))
	}
	if !cfg.IsPostgres() {
		errs = append(errs, errors.New("set WHARF_DB_URL=postgres://… to the database the processes share (SQLite serves one process only)"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("a distributed process needs an external bus and PostgreSQL: %w", errors.Join(errs...))
	}
	return nil
}

// serveUntilSignal runs until SIGINT/SIGTERM or a failure of the HTTP server, then shuts
// the process down in order.
func serveUntilSignal(ctx context.Context, stop context.CancelFunc, g *gateway.Gateway, log *slog.Logger) error {
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-g.ServeErr():
		log.Error("HTTP server failed; shutting down", "err", serveErr)
	}
	stop()
	// The drain bound comes from the settings; this outer bound only guards a hang.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := g.Shutdown(sctx); err != nil {
		log.Error("shutdown", "err", err)
	}
	log.Info("stopped")
	return serveErr
}
