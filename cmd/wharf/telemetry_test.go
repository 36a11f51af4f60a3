package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A bad OpenTelemetry variable stops the start with one line naming it, and never
// repeats a credential the value holds.
func TestStartupRefusesBadTelemetryVariables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, want string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT=grpc://u:hunter2@collector:4317", "OTEL_EXPORTER_OTLP_ENDPOINT: want an http:// or https:// URL"},
		{"OTEL_EXPORTER_OTLP_HEADERS=api-key", "OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf is supported"},
	} {
		t.Run(tc.env[:strings.IndexByte(tc.env, '=')], func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, wharfBinary(t), "standalone", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--as2-addr", "127.0.0.1:0")
			cmd.Env = childEnv(tc.env)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil {
				t.Fatal("the start succeeded")
			}
			text := strings.TrimRight(stderr.String(), "\n")
			if strings.Count(text, "\n") != 0 || !strings.HasPrefix(text, "wharf: ") || !strings.Contains(text, tc.want) {
				t.Errorf("stderr %q, want one line saying %q", text, tc.want)
			}
			if strings.Contains(text, "hunter2") {
				t.Errorf("stderr repeats a credential: %q", text)
			}
		})
	}
}
