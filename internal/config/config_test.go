package config

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/telemetry"
)

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    Config
		wantErr []string // each must appear in the error
		secret  string   // must not appear in the error
	}{
		{
			name: "defaults",
			env:  []string{"PATH=/usr/bin", "HOME=/root", "OTEL_ENABLED=true"},
			want: Default(),
		},
		{
			name: "everything set",
			env: []string{
				"WHARF_DATA_DIR=/var/lib/wharf",
				"WHARF_DB_URL=postgres://wharf:pw@db:5432/wharf?sslmode=verify-full",
				"WHARF_HTTP_ADDR=0.0.0.0:443",
				"WHARF_PUBLIC_URL=https://edi.example.com/",
				"WHARF_SESSION_KEY_FILE=/run/secrets/session",
				"WHARF_SECRETS_KEY_FILE=/run/secrets/master",
				"WHARF_AUDIT_KEY_FILE=/run/secrets/audit",
				"WHARF_LOG_LEVEL=WARN",
				"WHARF_NATS_URL=nats://n1:4222, tls://n2:4222",
				"WHARF_NATS_LISTEN=127.0.0.1:4222",
				"WHARF_AS2_ADDR=0.0.0.0:4080",
				"WHARF_METRICS_TOKEN=scrape-0123456789abcdef",
			},
			want: Config{
				DataDir:        "/var/lib/wharf",
				DBURL:          "postgres://wharf:pw@db:5432/wharf?sslmode=verify-full",
				HTTPAddr:       "0.0.0.0:443",
				PublicURL:      "https://edi.example.com/",
				SessionKeyFile: "/run/secrets/session",
				SecretsKeyFile: "/run/secrets/master",
				AuditKeyFile:   "/run/secrets/audit",
				LogLevel:       slog.LevelWarn,
				NATSURL:        "nats://n1:4222, tls://n2:4222",
				NATSListen:     "127.0.0.1:4222",
				AS2Addr:        "0.0.0.0:4080",
				MetricsToken:   "scrape-0123456789abcdef",
			},
		},
		{
			name: "postgresql scheme, unix socket, IPv6 listen address",
			env:  []string{"WHARF_DB_URL=postgresql:///wharf?host=/run/postgresql", "WHARF_HTTP_ADDR=[::1]:8080", "WHARF_LOG_LEVEL=debug"},
			want: func() Config {
				c := Default()
				c.DBURL, c.HTTPAddr, c.LogLevel = "postgresql:///wharf?host=/run/postgresql", "[::1]:8080", slog.LevelDebug
				return c
			}(),
		},
		{
			name: "empty values count as unset",
			env:  []string{"WHARF_DATA_DIR=", "WHARF_HTTP_ADDR=", "WHARF_LOG_LEVEL="},
			want: Default(),
		},
		{
			name: "test switches are allowed and ignored",
			env:  []string{"WHARF_TEST_POSTGRES_URL=postgres://localhost/test", "WHARF_TEST_CHROMIUM=1", "WHARF_TEST_S3_VERSITYGW=/usr/local/bin/versitygw", "WHARF_TEST_SCREENSHOTS=/tmp/shots"},
			want: Default(),
		},
		{name: "unknown variable", env: []string{"WHARF_DATADIR=/x"}, wantErr: []string{"WHARF_DATADIR: unknown variable", "WHARF_DATA_DIR"}},
		{name: "module settings are not variables", env: []string{"WHARF_AS2_PORT=8081"}, wantErr: []string{"WHARF_AS2_PORT"}},
		{name: "db url of another database", env: []string{"WHARF_DB_URL=mysql://root:hunter2@db/wharf"},
			wantErr: []string{"WHARF_DB_URL", "postgres://"}, secret: "hunter2"},
		{name: "db url that does not parse", env: []string{"WHARF_DB_URL=postgres://u:hunter2@db:port/x"},
			wantErr: []string{"WHARF_DB_URL"}, secret: "hunter2"},
		{name: "db url as a file path", env: []string{"WHARF_DB_URL=./wharf.db"}, wantErr: []string{"WHARF_DB_URL", "SQLite needs no URL"}},
		{name: "http addr without port", env: []string{"WHARF_HTTP_ADDR=localhost"}, wantErr: []string{"WHARF_HTTP_ADDR", "host:port"}},
		{name: "http addr with named port", env: []string{"WHARF_HTTP_ADDR=localhost:http"}, wantErr: []string{"WHARF_HTTP_ADDR", "port"}},
		{name: "http addr port out of range", env: []string{"WHARF_HTTP_ADDR=:65536"}, wantErr: []string{"WHARF_HTTP_ADDR", "0 to 65535"}},
		{name: "public url without scheme", env: []string{"WHARF_PUBLIC_URL=edi.example.com"}, wantErr: []string{"WHARF_PUBLIC_URL", "http"}},
		{name: "public url with other scheme", env: []string{"WHARF_PUBLIC_URL=ftp://edi.example.com"}, wantErr: []string{"WHARF_PUBLIC_URL"}},
		{name: "public url without host", env: []string{"WHARF_PUBLIC_URL=https://"}, wantErr: []string{"WHARF_PUBLIC_URL", "host"}},
		{name: "public url with credentials", env: []string{"WHARF_PUBLIC_URL=https://admin:hunter2@edi.example.com"},
			wantErr: []string{"WHARF_PUBLIC_URL", "user information"}, secret: "hunter2"},
		{name: "public url with query", env: []string{"WHARF_PUBLIC_URL=https://edi.example.com/?x=1"}, wantErr: []string{"WHARF_PUBLIC_URL", "query"}},
		{name: "log level", env: []string{"WHARF_LOG_LEVEL=verbose"}, wantErr: []string{"WHARF_LOG_LEVEL", "debug, info, warn, error"}},
		{name: "nats listen address without a port", env: []string{"WHARF_NATS_LISTEN=127.0.0.1"}, wantErr: []string{"WHARF_NATS_LISTEN"}},
		{name: "as2 address without a host", env: []string{"WHARF_AS2_ADDR=:8081"}, wantErr: []string{"WHARF_AS2_ADDR", "0.0.0.0"}},
		{name: "as2 address without a port", env: []string{"WHARF_AS2_ADDR=127.0.0.1"}, wantErr: []string{"WHARF_AS2_ADDR", "host:port"}},
		{name: "metrics token too short", env: []string{"WHARF_METRICS_TOKEN=hunter2"},
			wantErr: []string{"WHARF_METRICS_TOKEN", "16 characters"}, secret: "hunter2"},
		{name: "metrics token with a space", env: []string{"WHARF_METRICS_TOKEN=hunter2 hunter2 hunter2"},
			wantErr: []string{"WHARF_METRICS_TOKEN", "without spaces"}, secret: "hunter2"},
		{name: "nats url of another scheme", env: []string{"WHARF_NATS_URL=http://n1:4222"}, wantErr: []string{"WHARF_NATS_URL", "nats://"}},
		{name: "one bad nats url in a list", env: []string{"WHARF_NATS_URL=nats://user:hunter2@n1:4222,n2:4222"},
			wantErr: []string{"WHARF_NATS_URL"}, secret: "hunter2"},
		{name: "opentelemetry endpoint", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318/"},
			want: withTelemetry(telemetry.Config{TracesURL: "http://collector:4318/v1/traces", LogsURL: "http://collector:4318/v1/logs"})},
		{
			name: "opentelemetry endpoint, headers, timeout",
			env:  []string{"OTEL_EXPORTER_OTLP_ENDPOINT=https://otel.example.com:4318", "OTEL_EXPORTER_OTLP_HEADERS=api-key=s3cret", "OTEL_EXPORTER_OTLP_TIMEOUT=2500"},
			want: withTelemetry(telemetry.Config{TracesURL: "https://otel.example.com:4318/v1/traces", LogsURL: "https://otel.example.com:4318/v1/logs",
				TracesHeaders: "api-key=s3cret", LogsHeaders: "api-key=s3cret", Timeout: 2500 * time.Millisecond}),
		},
		{
			name: "opentelemetry signal endpoints are used as they are",
			env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:4318/custom",
				"OTEL_EXPORTER_OTLP_LOGS_HEADERS=x=1", "OTEL_SERVICE_NAME=edi", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod"},
			want: withTelemetry(telemetry.Config{TracesURL: "http://t:4318/custom", LogsURL: "http://c:4318/v1/logs", LogsHeaders: "x=1",
				ServiceName: "edi", ResourceAttributes: "deployment.environment=prod"}),
		},
		{name: "opentelemetry traces only", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:4318/v1/traces"},
			want: withTelemetry(telemetry.Config{TracesURL: "http://t:4318/v1/traces"})},
		{name: "opentelemetry logs exporter none", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_LOGS_EXPORTER=none"},
			want: withTelemetry(telemetry.Config{TracesURL: "http://c:4318/v1/traces"})},
		{name: "opentelemetry sdk disabled", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_SDK_DISABLED=true"}, want: Default()},
		{name: "opentelemetry empty endpoint", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT="}, want: Default()},
		{name: "opentelemetry endpoint of another scheme", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=grpc://u:hunter2@collector:4317"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://"}, secret: "hunter2"},
		{name: "opentelemetry endpoint with a query", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=https://c/v1/traces?key=hunter2"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "query"}, secret: "hunter2"},
		{name: "opentelemetry grpc", env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, wantErr: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}},
		{name: "opentelemetry bad headers", env: []string{"OTEL_EXPORTER_OTLP_HEADERS=hunter2"}, wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "key=value"}, secret: "hunter2"},
		{name: "opentelemetry bad header encoding", env: []string{"OTEL_EXPORTER_OTLP_HEADERS=k=hunter2%zz"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "encoded"}, secret: "hunter2"},
		{name: "opentelemetry bad timeout", env: []string{"OTEL_EXPORTER_OTLP_TIMEOUT=5s"}, wantErr: []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "milliseconds"}},
		{name: "opentelemetry bad resource attributes", env: []string{"OTEL_RESOURCE_ATTRIBUTES=env"}, wantErr: []string{"OTEL_RESOURCE_ATTRIBUTES"}},
		{name: "opentelemetry bad exporter", env: []string{"OTEL_TRACES_EXPORTER=zipkin"}, wantErr: []string{"OTEL_TRACES_EXPORTER", "otlp or none"}},
		{name: "opentelemetry bad disabled", env: []string{"OTEL_SDK_DISABLED=maybe"}, wantErr: []string{"OTEL_SDK_DISABLED"}},
		{
			name: "every problem at once",
			env: []string{
				"WHARF_UNKNOWN=1", "WHARF_DB_URL=mysql://x", "WHARF_HTTP_ADDR=nope",
				"WHARF_PUBLIC_URL=nope", "WHARF_LOG_LEVEL=loud", "WHARF_NATS_URL=nope", "WHARF_TEST_CHROMIUM=1",
			},
			wantErr: []string{"WHARF_UNKNOWN", "WHARF_DB_URL", "WHARF_HTTP_ADDR", "WHARF_PUBLIC_URL", "WHARF_LOG_LEVEL", "WHARF_NATS_URL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(tt.env)
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
			if n := len(strings.Split(err.Error(), "\n")); len(tt.wantErr) > 2 && n < 6 {
				t.Errorf("want one line per problem, got %d lines: %q", n, err)
			}
		})
	}
}

// withTelemetry is the default configuration with the OTEL_* variables' part set.
func withTelemetry(tel telemetry.Config) Config {
	c := Default()
	c.Telemetry = tel
	return c
}

func TestDerivedPaths(t *testing.T) {
	c := Default()
	c.DataDir = filepath.FromSlash("/srv/wharf")
	tests := []struct{ got, want string }{
		{c.SQLitePath(), filepath.FromSlash("/srv/wharf/wharf.db")},
		{c.PayloadsDir(), filepath.FromSlash("/srv/wharf/payloads")},
		{c.SecretsKeyPath(), filepath.FromSlash("/srv/wharf/secrets.key")},
		{c.SessionKeyPath(), filepath.FromSlash("/srv/wharf/session.key")},
		{c.AuditKeyPath(), filepath.FromSlash("/srv/wharf/audit.key")},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
	c.PayloadDir = "/mnt/shared/payloads"
	if got := c.PayloadsDir(); got != "/mnt/shared/payloads" {
		t.Errorf("PayloadsDir with a directory set = %s", got)
	}
	c.SecretsKeyFile = "/run/secrets/master"
	if got := c.SecretsKeyPath(); got != "/run/secrets/master" {
		t.Errorf("SecretsKeyPath with a file set = %s", got)
	}
	if c.IsPostgres() {
		t.Error("IsPostgres without a URL")
	}
	c.DBURL = "postgres://db/wharf"
	if !c.IsPostgres() {
		t.Error("IsPostgres with a URL is false")
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct {
		addr, public string
		want         string
		wantErr      bool
	}{
		{addr: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{addr: "localhost:9000", want: "http://localhost:9000"},
		{addr: "[::1]:8080", want: "http://[::1]:8080"},
		{addr: "0.0.0.0:8080", wantErr: true},
		{addr: ":8080", wantErr: true},
		{addr: "10.0.0.5:8080", wantErr: true},
		{addr: "0.0.0.0:8080", public: "https://edi.example.com/", want: "https://edi.example.com"},
	}
	for _, tt := range tests {
		c := Default()
		c.HTTPAddr, c.PublicURL = tt.addr, tt.public
		got, err := c.BaseURL()
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("BaseURL(%s, %q) = %q, %v; want %q, error %v", tt.addr, tt.public, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "WHARF_PUBLIC_URL") {
			t.Errorf("error %q does not say what to set", err)
		}
	}
}

func TestValidateIsFromEnvRules(t *testing.T) {
	// A Config built by hand (as a test or a command might) is held to the same rules.
	c := Default()
	c.HTTPAddr = "bad"
	c.DataDir = ""
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "WHARF_HTTP_ADDR") || !strings.Contains(err.Error(), "WHARF_DATA_DIR: must not be empty") {
		t.Fatalf("Validate = %v", err)
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
		t.Fatalf("want two joined problems, got %v", err)
	}
}
