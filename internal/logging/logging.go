// Package logging carries message and delivery ids in the context so every log line
// about a message names it without anyone adding it by hand.
package logging

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

type ctxKey int

const (
	keyMessageID ctxKey = iota
	keyDeliveryID
	keyCorrelationID
)

// WithMessageID returns ctx carrying the message id for log lines.
func WithMessageID(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, keyMessageID, id)
}

// WithMessage returns ctx carrying a message's id and correlation id for log lines, so
// a line about a message leads to everything of its origin (GET /api/v1/trace).
func WithMessage(ctx context.Context, id int64, correlationID string) context.Context {
	ctx = WithMessageID(ctx, id)
	if correlationID == "" {
		return ctx
	}
	return context.WithValue(ctx, keyCorrelationID, correlationID)
}

// WithDeliveryID returns ctx carrying the delivery id for log lines.
func WithDeliveryID(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, keyDeliveryID, id)
}

// contextHandler adds the ids found in the context to each record: the message and
// delivery, and the trace and span of the span the context carries, so a line found in
// the local log leads to its trace and back.
type contextHandler struct{ slog.Handler }

// NewHandler wraps h so records logged with a context get its message_id,
// correlation_id, delivery_id, trace_id and span_id.
func NewHandler(h slog.Handler) slog.Handler { return contextHandler{h} }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(keyMessageID).(int64); ok {
		r.AddAttrs(slog.Int64("message_id", id))
	}
	if id, ok := ctx.Value(keyCorrelationID).(string); ok {
		r.AddAttrs(slog.String("correlation_id", id))
	}
	if id, ok := ctx.Value(keyDeliveryID).(int64); ok {
		r.AddAttrs(slog.Int64("delivery_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(as)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}

// New returns the process logger: text lines on w at the given level.
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(NewHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
}
