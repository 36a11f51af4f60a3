package delivery

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"wharf/internal/persistence"
	"wharf/internal/telemetry"
)

// startSpan begins the span of one attempt as a child of the span that dispatched the
// message (its stored trace parent), so every attempt, on whichever process claims it,
// joins the message's one trace. The span carries ids, the target and the attempt's
// number: never a party, an address or a payload.
func (w *worker) startSpan(ctx context.Context, c persistence.Claim) (context.Context, trace.Span) {
	ctx = telemetry.WithTraceParent(ctx, c.Message.TraceParent)
	return w.e.cfg.Tracer.Start(ctx, "delivery attempt", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.Int64("wharf.message_id", c.Message.ID),
			attribute.Int64("wharf.delivery_id", c.Delivery.ID),
			attribute.String("wharf.target", string(w.name)),
			attribute.Int("wharf.attempt", c.Delivery.Attempts),
		))
}

// endSpan records what the attempt came to: the outcome the engine recorded (or lost,
// interrupted) and, for a failure, its class. The error's text stays in the delivery's
// history; it may name an address.
func endSpan(span trace.Span, outcome string, res Result) {
	span.SetAttributes(attribute.String("wharf.outcome", outcome))
	if res.Class != "" {
		span.SetAttributes(attribute.String("wharf.error_class", string(res.Class)))
	}
	switch outcome {
	case string(persistence.OutcomeRetry), string(persistence.OutcomeFailed):
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}
