// Package telemetry exports the process's traces and logs over OTLP/HTTP when the
// standard OpenTelemetry variables ask for it, and is a no-op tracer otherwise. It holds
// no global state: each gateway has its own providers, so two gateways in one test
// process export as two services.
//
// What leaves the process is filtered (filter.go): spans keep an allow-list of
// attributes, so URLs, query strings, headers and payload bytes never reach a collector.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/contrib/bridges/otelslog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// scope names the instrumentation of Wharf's own spans and log records.
const scope = "wharf"

// Identity names the process in the exported resource.
type Identity struct {
	Version string
	// InstanceID tells processes of one deployment apart (service.instance.id) unless
	// OTEL_RESOURCE_ATTRIBUTES sets it.
	InstanceID string
}

// Telemetry is one process's tracer and log exporter. A nil *Telemetry is valid and
// exports nothing.
type Telemetry struct {
	tp     *sdktrace.TracerProvider // nil when traces are not exported
	lp     *sdklog.LoggerProvider   // nil when logs are not exported
	tracer trace.Tracer
}

// New builds the exporters cfg asks for; with nothing configured it returns a
// Telemetry whose tracer is a no-op. Nothing is sent until a span ends or a record is
// logged; the exporters connect lazily.
func New(ctx context.Context, cfg Config, id Identity) (*Telemetry, error) {
	t := &Telemetry{tracer: noop.NewTracerProvider().Tracer(scope)}
	if !cfg.Enabled() {
		return t, nil
	}
	res, err := newResource(cfg, id)
	if err != nil {
		return nil, err
	}
	if cfg.TracesURL != "" {
		headers, _ := parseHeaders(cfg.TracesHeaders) // checked by ParseEnv
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.TracesURL), otlptracehttp.WithHeaders(headers)}
		if cfg.Timeout > 0 {
			opts = append(opts, otlptracehttp.WithTimeout(cfg.Timeout))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: trace exporter: %w", envTracesEndpoint, err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(filterExporter{exp}))
		t.tracer = t.tp.Tracer(scope)
	}
	if cfg.LogsURL != "" {
		headers, _ := parseHeaders(cfg.LogsHeaders)
		opts := []otlploghttp.Option{otlploghttp.WithEndpointURL(cfg.LogsURL), otlploghttp.WithHeaders(headers)}
		if cfg.Timeout > 0 {
			opts = append(opts, otlploghttp.WithTimeout(cfg.Timeout))
		}
		exp, err := otlploghttp.New(ctx, opts...)
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, fmt.Errorf("%s: log exporter: %w", envLogsEndpoint, err)
		}
		t.lp = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
	}
	return t, nil
}

// newResource is service.name wharf (or OTEL_SERVICE_NAME), the version and instance,
// then OTEL_RESOURCE_ATTRIBUTES over them.
func newResource(cfg Config, id Identity) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", "wharf")}
	if id.Version != "" {
		attrs = append(attrs, attribute.String("service.version", id.Version))
	}
	if id.InstanceID != "" {
		attrs = append(attrs, attribute.String("service.instance.id", id.InstanceID))
	}
	extra, err := parseHeaders(cfg.ResourceAttributes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envResourceAttrs, err)
	}
	for k, v := range extra {
		attrs = append(attrs, attribute.String(k, v))
	}
	// The service name variable wins over the attribute, as the specification says.
	if cfg.ServiceName != "" {
		attrs = append(attrs, attribute.String("service.name", cfg.ServiceName))
	}
	// NewSchemaless keeps the last value of a repeated key.
	return resource.NewSchemaless(attrs...), nil
}

// Tracer is the tracer of Wharf's own spans: a no-op one when traces are not exported.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return noop.NewTracerProvider().Tracer(scope)
	}
	return t.tracer
}

// Tracing reports whether spans are exported.
func (t *Telemetry) Tracing() bool { return t != nil && t.tp != nil }

// LogHandler is the handler that sends records at level or above to the OTLP log
// exporter, nil when logs are not exported.
func (t *Telemetry) LogHandler(level slog.Leveler) slog.Handler {
	if t == nil || t.lp == nil {
		return nil
	}
	return levelHandler{Handler: otelslog.NewHandler(scope, otelslog.WithLoggerProvider(t.lp)), level: level}
}

// Shutdown sends what the exporters still hold and stops them.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		if err := t.tp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush traces: %w", err))
		}
	}
	if t.lp != nil {
		if err := t.lp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush logs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// levelHandler passes on the records at its level or above; the bridge itself would
// take every level.
type levelHandler struct {
	slog.Handler
	level slog.Leveler
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level.Level() && h.Handler.Enabled(ctx, l)
}

func (h levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return levelHandler{Handler: h.Handler.WithAttrs(as), level: h.level}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{Handler: h.Handler.WithGroup(name), level: h.level}
}
