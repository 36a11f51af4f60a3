package telemetry

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"wharf/internal/httproute"
)

// Handler gives each request to h a server span that continues the caller's
// traceparent. name is the span's name; empty names it by the ServeMux pattern that
// served the request (httproute), or by the method when none matched. Without traces h
// is returned as it is.
func (t *Telemetry) Handler(h http.Handler, name string) http.Handler {
	if !t.Tracing() {
		return h
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name != "" {
			h.ServeHTTP(w, r)
			return
		}
		r, pattern := httproute.Track(r)
		h.ServeHTTP(w, r)
		if p := pattern(); p != "" {
			span := trace.SpanFromContext(r.Context())
			span.SetName(p)
			span.SetAttributes(attribute.String("http.route", p))
		}
	})
	return otelhttp.NewHandler(inner, name,
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(propagator),
		// The process's metrics are Prometheus's (internal/metrics), not OpenTelemetry's.
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(op string, r *http.Request) string {
			if op != "" {
				return op
			}
			return r.Method
		}))
}

// Transport gives each request through rt a client span and sends the span as the
// traceparent header, so a receiver that traces continues the trace. name is the
// span's name. Without traces rt is returned as it is (nil stays nil: the default
// transport).
func (t *Telemetry) Transport(rt http.RoundTripper, name string) http.RoundTripper {
	if !t.Tracing() {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return otelhttp.NewTransport(rt,
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(propagator),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return name }))
}
