package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is what the standard OpenTelemetry variables ask of the exporters. It holds the
// variables' text (so a process's Config stays comparable) and is checked when read.
type Config struct {
	// TracesURL and LogsURL are where spans and log records are posted; empty exports
	// nothing of that signal.
	TracesURL string
	LogsURL   string
	// Headers is OTEL_EXPORTER_OTLP_HEADERS (or the signal's own) as given: key=value
	// pairs separated by commas, values URL-encoded. They often hold an API key.
	TracesHeaders string
	LogsHeaders   string
	// Timeout bounds one export; zero keeps the exporter's default.
	Timeout time.Duration
	// ServiceName is OTEL_SERVICE_NAME; empty means wharf.
	ServiceName string
	// ResourceAttributes is OTEL_RESOURCE_ATTRIBUTES as given.
	ResourceAttributes string
}

// Enabled reports whether anything is exported.
func (c Config) Enabled() bool { return c.TracesURL != "" || c.LogsURL != "" }

// The variables read, as the OpenTelemetry specification names them.
const (
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envLogsEndpoint   = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envLogsProtocol   = "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"
	envHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	envLogsHeaders    = "OTEL_EXPORTER_OTLP_LOGS_HEADERS"
	envTimeout        = "OTEL_EXPORTER_OTLP_TIMEOUT"
	envServiceName    = "OTEL_SERVICE_NAME"
	envResourceAttrs  = "OTEL_RESOURCE_ATTRIBUTES"
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
	envLogsExporter   = "OTEL_LOGS_EXPORTER"
)

// ParseEnv reads the OpenTelemetry variables of environ (as from os.Environ). An empty
// variable counts as unset. Every problem is reported at once, each naming its variable;
// values are never repeated, since endpoints and headers may hold credentials.
func ParseEnv(environ []string) (Config, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "OTEL_") && v != "" {
			env[k] = v
		}
	}
	var c Config
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	disabled := false
	if v, ok := env[envSDKDisabled]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad(envSDKDisabled, "want true or false")
		}
		disabled = b
	}
	for _, p := range []string{envProtocol, envTracesProtocol, envLogsProtocol} {
		if v, ok := env[p]; ok && v != "http/protobuf" {
			bad(p, "only http/protobuf is supported")
		}
	}
	signal := func(specific, exporterVar, path string) string {
		if v, ok := env[exporterVar]; ok && v != "otlp" && v != "none" {
			bad(exporterVar, "want otlp or none")
		}
		if env[exporterVar] == "none" {
			return ""
		}
		if v, ok := env[specific]; ok {
			if err := checkEndpoint(v); err != nil {
				bad(specific, "%v", err)
				return ""
			}
			return v
		}
		if v, ok := env[envEndpoint]; ok {
			if err := checkEndpoint(v); err != nil {
				return "" // reported once below
			}
			return strings.TrimSuffix(v, "/") + path
		}
		return ""
	}
	if v, ok := env[envEndpoint]; ok {
		if err := checkEndpoint(v); err != nil {
			bad(envEndpoint, "%v", err)
		}
	}
	c.TracesURL = signal(envTracesEndpoint, envTracesExporter, "/v1/traces")
	c.LogsURL = signal(envLogsEndpoint, envLogsExporter, "/v1/logs")
	c.TracesHeaders, c.LogsHeaders = env[envHeaders], env[envHeaders]
	if v, ok := env[envTracesHeaders]; ok {
		c.TracesHeaders = v
	}
	if v, ok := env[envLogsHeaders]; ok {
		c.LogsHeaders = v
	}
	for name, v := range map[string]string{envHeaders: env[envHeaders], envTracesHeaders: env[envTracesHeaders], envLogsHeaders: env[envLogsHeaders]} {
		if _, err := parseHeaders(v); err != nil {
			bad(name, "%v", err)
		}
	}
	if v, ok := env[envTimeout]; ok {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			bad(envTimeout, "want a positive number of milliseconds")
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	c.ServiceName = env[envServiceName]
	c.ResourceAttributes = env[envResourceAttrs]
	if _, err := parseHeaders(c.ResourceAttributes); err != nil {
		bad(envResourceAttrs, "%v", err)
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	if disabled {
		return Config{}, nil
	}
	return c, nil
}

// checkEndpoint accepts an absolute http or https URL without a query.
func checkEndpoint(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("want an http:// or https:// URL")
	case u.Host == "":
		return errors.New("the URL has no host")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("the URL must have no query or fragment")
	}
	return nil
}

// parseHeaders reads key=value pairs separated by commas, values URL-encoded: the syntax
// of the header variables and of OTEL_RESOURCE_ATTRIBUTES.
func parseHeaders(v string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for i, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %d is not key=value", i+1)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s) has a badly encoded value", i+1, k)
		}
		out[k] = dec
	}
	return out, nil
}
