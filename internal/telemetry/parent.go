package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// propagator is W3C trace context: the traceparent header, and the form a message's
// trace parent is stored in.
var propagator = propagation.TraceContext{}

// TraceParent is the W3C traceparent of the span in ctx, "" when ctx has none.
func TraceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c.Get("traceparent")
}

// WithTraceParent returns ctx continuing the trace of a stored traceparent; an empty or
// malformed one leaves ctx as it is.
func WithTraceParent(ctx context.Context, traceParent string) context.Context {
	if traceParent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceParent})
}
