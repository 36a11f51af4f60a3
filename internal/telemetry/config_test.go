package telemetry

import (
	"strings"
	"testing"
	"time"
)

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    Config
		wantErr []string // each must appear in the error
		secret  string   // must not appear in the error
	}{
		{name: "nothing set", env: []string{"PATH=/usr/bin", "OTEL_ENABLED=true"}, want: Config{}},
		{name: "empty counts as unset", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT="}, want: Config{}},
		{
			name: "one endpoint for both signals",
			env:  []string{"OTEL_EXPORTER_OTLP_ENDPOINT=https://otel.example.com:4318", "OTEL_EXPORTER_OTLP_HEADERS=api-key=s3cret", "OTEL_EXPORTER_OTLP_TIMEOUT=2500"},
			want: Config{TracesURL: "https://otel.example.com:4318/v1/traces", LogsURL: "https://otel.example.com:4318/v1/logs",
				TracesHeaders: "api-key=s3cret", LogsHeaders: "api-key=s3cret", Timeout: 2500 * time.Millisecond},
		},
		{
			name: "signal endpoints are used as they are",
			env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:4318/custom",
				"OTEL_EXPORTER_OTLP_LOGS_HEADERS=x=1", "OTEL_SERVICE_NAME=edi", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod"},
			want: Config{TracesURL: "http://t:4318/custom", LogsURL: "http://c:4318/v1/logs", LogsHeaders: "x=1",
				ServiceName: "edi", ResourceAttributes: "deployment.environment=prod"},
		},
		{name: "traces only", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:4318/v1/traces"},
			want: Config{TracesURL: "http://t:4318/v1/traces"}},
		{name: "logs exporter none", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_LOGS_EXPORTER=none"},
			want: Config{TracesURL: "http://c:4318/v1/traces"}},
		{name: "sdk disabled", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_SDK_DISABLED=true"}, want: Config{}},
		{name: "endpoint not http", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=grpc://c:4317"}, wantErr: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://"}},
		{name: "endpoint with a query", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=https://c/v1/traces?key=hunter2"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "query"}, secret: "hunter2"},
		{name: "grpc protocol", env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, wantErr: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}},
		{name: "bad headers", env: []string{"OTEL_EXPORTER_OTLP_HEADERS=hunter2"}, wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "key=value"}, secret: "hunter2"},
		{name: "bad header encoding", env: []string{"OTEL_EXPORTER_OTLP_HEADERS=k=hunter2%zz"}, wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "encoded"}, secret: "hunter2"},
		{name: "bad timeout", env: []string{"OTEL_EXPORTER_OTLP_TIMEOUT=5s"}, wantErr: []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "milliseconds"}},
		{name: "bad resource attributes", env: []string{"OTEL_RESOURCE_ATTRIBUTES=env"}, wantErr: []string{"OTEL_RESOURCE_ATTRIBUTES"}},
		{name: "bad exporter", env: []string{"OTEL_TRACES_EXPORTER=zipkin"}, wantErr: []string{"OTEL_TRACES_EXPORTER", "otlp or none"}},
		{name: "bad disabled", env: []string{"OTEL_SDK_DISABLED=maybe"}, wantErr: []string{"OTEL_SDK_DISABLED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnv(tt.env)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Fatalf("config\n got %+v\nwant %+v", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, config %+v", got)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error repeats a credential: %q", err)
			}
		})
	}
}
