package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"wharf/internal/config"
	"wharf/internal/gateway"
	"wharf/internal/logging"
	"wharf/internal/product"
)

func version() string { return product.Version() }

// loadConfig reads the environment and the command's flags; flags win over variables.
func loadConfig(name string, args []string, flags ...string) (config.Config, []string, error) {
	cfg, err := config.FromEnv(os.Environ())
	if err != nil {
		return cfg, nil, err
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs, flags...)
	pos, err := config.ParseArgs(fs, args)
	if err != nil {
		return cfg, nil, fmt.Errorf("%w: %s: %v", errUsage, name, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, err
	}
	return cfg, pos, nil
}

func runStandalone(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, pos, err := loadConfig("standalone", args, "data-dir", "db-url", "http-addr", "public-url", "nats", "nats-listen", "as2-addr", "log-level")
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: standalone takes no arguments, got %q", errUsage, pos)
	}
	log := logging.New(stderr, cfg.LogLevel)
	setMemoryLimit(log)
	tuneGC()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	g, err := gateway.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := g.Start(ctx); err != nil {
		_ = g.Shutdown(context.Background())
		return err
	}
	if err := printSummary(ctx, stdout, g.Addr(), cfg.DataDir, g.Services); err != nil {
		_ = g.Shutdown(context.Background())
		return err
	}
	fmt.Fprintf(stdout, "Create an API token with: wharf tokens create NAME --data-dir %s\n", cfg.DataDir)
	if err := printFirstAdminLink(ctx, g.Store, cfg, stdout, time.Now()); err != nil {
		_ = g.Shutdown(context.Background())
		return err
	}

	return serveUntilSignal(ctx, stop, g, log)
}

// defaultMemoryLimit is the Go heap's soft limit when GOMEMLIMIT is not set. Large AS2
// messages are held a few times over while their layers are built or opened; with the
// runtime's default the heap may grow to twice what is live before it is collected, so
// the limit makes the collector work harder instead, near the limit only. Small messages
// never come close to it.
const defaultMemoryLimit = 448 << 20

func setMemoryLimit(log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return // the runtime has applied the operator's value
	}
	debug.SetMemoryLimit(defaultMemoryLimit)
	log.Debug("Go heap soft limit set", "bytes", defaultMemoryLimit)
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create data directory %s: %w", dir, err)
	}
	return nil
}
