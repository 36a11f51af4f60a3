package logging

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestContextIDs(t *testing.T) {
	tests := []struct {
		name string
		ctx  context.Context
		want []string
		not  []string
	}{
		{"none", context.Background(), nil, []string{"message_id", "delivery_id", "trace_id", "span_id"}},
		{"message", WithMessageID(context.Background(), 42), []string{"message_id=42"}, []string{"delivery_id", "correlation_id"}},
		{"message and correlation", WithMessage(context.Background(), 42, "PO 4711"), []string{"message_id=42", `correlation_id="PO 4711"`}, []string{"delivery_id"}},
		{"both", WithDeliveryID(WithMessageID(context.Background(), 7), 9), []string{"message_id=7", "delivery_id=9"}, []string{"trace_id"}},
		{"span", trace.ContextWithSpanContext(WithMessageID(context.Background(), 5), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0x00, 0xf0, 0x67, 2}, TraceFlags: trace.FlagsSampled,
		})), []string{"message_id=5", "trace_id=4bf90100000000000000000000000000", "span_id=00f0670200000000"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := New(&buf, slog.LevelInfo).With("component", "test")
			log.InfoContext(tt.ctx, "hello")
			out := buf.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("log line %q lacks %q", out, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("log line %q has %q", out, n)
				}
			}
		})
	}
}
