package dispatch

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"wharf/internal/persistence"
	"wharf/internal/telemetry"
)

// startSpans begins one dispatch span per message, each a child of the span in ctx (the
// request that brought it) or the root of a new trace, and stores the span as the
// message's trace parent: the one trace every attempt of the message joins.
func (d *Dispatcher) startSpans(ctx context.Context, news []persistence.NewMessage) []trace.Span {
	if d.Tracer == nil {
		return nil
	}
	spans := make([]trace.Span, len(news))
	for i := range news {
		m := &news[i].Message
		sctx, span := d.Tracer.Start(ctx, "dispatch", trace.WithAttributes(
			attribute.Int64("wharf.message_id", m.ID),
			attribute.String("wharf.source", string(m.Source)),
			attribute.Int("wharf.targets", len(news[i].Targets)),
		))
		m.TraceParent = telemetry.TraceParent(sctx)
		spans[i] = span
	}
	return spans
}

// endSpans ends the dispatch spans with the outcome of the batch's one transaction.
func endSpans(spans []trace.Span, err error) {
	for _, s := range spans {
		if err != nil {
			s.SetStatus(codes.Error, "dispatch failed")
		}
		s.End()
	}
}
