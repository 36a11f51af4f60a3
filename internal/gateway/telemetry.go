package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"wharf/internal/config"
	"wharf/internal/logging"
	"wharf/internal/product"
	"wharf/internal/telemetry"
)

// telemetryFlush bounds how long shutdown waits for the collector to take what the
// exporters still hold.
const telemetryFlush = 5 * time.Second

// openTelemetry builds the OTLP exporters the configuration asks for and the process's
// logger: log's own handler, the web UI's ring, and the OTLP log exporter when logs
// are exported, each record carrying the ids its context holds.
func openTelemetry(ctx context.Context, cfg config.Config, log *slog.Logger, ring *logging.Ring) (*telemetry.Telemetry, *slog.Logger, error) {
	tel, err := telemetry.New(ctx, cfg.Telemetry, telemetry.Identity{Version: product.Version(), InstanceID: instanceID()})
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: %w", err)
	}
	handlers := []slog.Handler{log.Handler(), logging.NewHandler(ring.Handler())}
	if h := tel.LogHandler(cfg.LogLevel); h != nil {
		handlers = append(handlers, logging.NewHandler(h))
	}
	return tel, slog.New(logging.Tee(handlers...)), nil
}

// traceDispatch has the dispatcher start each message's trace when spans are exported;
// otherwise messages keep no trace parent.
func (g *Gateway) traceDispatch() {
	if g.Telemetry.Tracing() {
		g.Dispatcher.Tracer = g.Telemetry.Tracer()
	}
}

// flushTelemetry sends the spans and records still held, last, so the shutdown's own
// are among them.
func (g *Gateway) flushTelemetry() {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlush)
	defer cancel()
	if err := g.Telemetry.Shutdown(ctx); err != nil {
		g.log.Warn("flush telemetry", "err", err)
	}
}

// instanceID tells this process's spans from another's of the same service
// (service.instance.id), new at each start.
func instanceID() string {
	return rand.Text()
}
