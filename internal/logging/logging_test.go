package logging

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestContextIDs(t *testing.T) {
	tests := []struct {
		name string
		ctx  context.Context
		want []string
		not  []string
	}{
		{"none", context.Background(), nil, []string{"message_id", "delivery_id"}},
		{"message", WithMessageID(context.Background(), 42), []string{"message_id=42"}, []string{"delivery_id"}},
		{"both", WithDeliveryID(WithMessageID(context.Background(), 7), 9), []string{"message_id=7", "delivery_id=9"}, nil},
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
