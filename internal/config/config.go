// Package config reads the process settings every Wharf command shares: the environment
// (WHARF_*) and the global flags. Precedence is flag > environment > default.
//
// Parsing is strict: an unknown WHARF_* variable or a bad value stops the start with an
// error naming the variable or flag, and every problem is reported at once so an operator
// fixes them in one go. Each value has one rule, applied alike to the environment and to
// flags. Errors never repeat URL values, which may hold credentials.
//
// Modules have no environment variables; per-instance settings are stored config.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"wharf/internal/telemetry"
)

// Defaults for a fresh machine: everything under ./wharf-data, the UI on loopback.
const (
	DefaultDataDir  = "./wharf-data"
	DefaultHTTPAddr = "127.0.0.1:8080"
)

// Config holds the shared settings of a Wharf process.
type Config struct {
	DataDir        string
	DBURL          string // PostgreSQL URL; empty means SQLite in the data directory
	HTTPAddr       string
	PublicURL      string // empty means derived from HTTPAddr when that is loopback
	SessionKeyFile string
	SecretsKeyFile string
	AuditKeyFile   string
	NATSURL        string // empty means the embedded bus
	NATSListen     string // host:port for the embedded bus to accept other processes; empty for none
	AS2Addr        string // host:port of the default AS2 receiver on a new database; empty for its default
	MetricsToken   string // bearer token /metrics requires; empty leaves /metrics open
	LogLevel       slog.Level
	// Telemetry is what the standard OTEL_* variables ask for: traces and logs over OTLP.
	Telemetry telemetry.Config
	// NATS holds the external bus's credentials and TLS files, kept out of NATSURL.
	NATS NATSAuth
	// ProbeAddr is where a process without the API role serves /healthz, /readyz and
	// /metrics.
	ProbeAddr string
	// PayloadDir is where payloads are stored; empty means "payloads" in the data
	// directory. The processes of a distributed installation share one (a network file
	// system) while each keeps a data directory of its own.
	PayloadDir string

	// fromFlag marks the settings given as flags, so errors name the flag the operator
	// typed rather than the variable. A bit set keeps Config comparable.
	fromFlag uint32
}

// Default is the configuration with no environment and no flags.
func Default() Config {
	return Config{DataDir: DefaultDataDir, HTTPAddr: DefaultHTTPAddr, LogLevel: slog.LevelInfo}
}

// setting is one string-valued setting: its names and its rule. The table is the one
// place a setting's names and validation live.
type setting struct {
	bit   uint32
	env   string
	flag  string // empty when there is no global flag
	usage string
	field func(*Config) *string
	// check validates a non-empty value; the message it returns follows the name.
	check func(string) error
	// required refuses an empty value given explicitly (as a flag).
	required bool
}

const (
	bitDataDir uint32 = 1 << iota
	bitDBURL
	bitHTTPAddr
	bitPublicURL
	bitSessionKeyFile
	bitSecretsKeyFile
	bitAuditKeyFile
	bitNATSURL
	bitNATSListen
	bitAS2Addr
	bitMetricsToken
	bitNATSCreds
	bitNATSUser
	bitNATSPassword
	bitNATSToken
	bitNATSTLSCA
	bitNATSTLSCert
	bitNATSTLSKey
	bitProbeAddr
	bitPayloadDir
)

var settings = []setting{
	{bit: bitDataDir, env: "WHARF_DATA_DIR", flag: "data-dir", required: true,
		usage: "directory for the SQLite database, payloads and generated keys",
		field: func(c *Config) *string { return &c.DataDir }},
	{bit: bitDBURL, env: "WHARF_DB_URL", flag: "db-url", check: checkDBURL,
		usage: "PostgreSQL URL (postgres://…); empty for SQLite in the data directory",
		field: func(c *Config) *string { return &c.DBURL }},
	{bit: bitHTTPAddr, env: "WHARF_HTTP_ADDR", flag: "http-addr", check: checkHTTPAddr, required: true,
		usage: "host:port the API and UI listen on",
		field: func(c *Config) *string { return &c.HTTPAddr }},
	{bit: bitPublicURL, env: "WHARF_PUBLIC_URL", flag: "public-url", check: checkPublicURL,
		usage: "absolute http(s) URL users and partners reach this server at",
		field: func(c *Config) *string { return &c.PublicURL }},
	{bit: bitSessionKeyFile, env: "WHARF_SESSION_KEY_FILE",
		field: func(c *Config) *string { return &c.SessionKeyFile }},
	{bit: bitSecretsKeyFile, env: "WHARF_SECRETS_KEY_FILE",
		field: func(c *Config) *string { return &c.SecretsKeyFile }},
	{bit: bitAuditKeyFile, env: "WHARF_AUDIT_KEY_FILE",
		field: func(c *Config) *string { return &c.AuditKeyFile }},
	{bit: bitNATSURL, env: "WHARF_NATS_URL", flag: "nats", check: checkNATSURL,
		usage: "external NATS cluster URL(s) (nats:// or tls://, comma-separated); empty for the embedded bus",
		field: func(c *Config) *string { return &c.NATSURL }},
	{bit: bitNATSListen, env: "WHARF_NATS_LISTEN", flag: "nats-listen", check: checkHTTPAddr,
		usage: "host:port on which the embedded bus also accepts other processes; empty for none",
		field: func(c *Config) *string { return &c.NATSListen }},
	{bit: bitAS2Addr, env: "WHARF_AS2_ADDR", flag: "as2-addr", check: checkAS2Addr,
		usage: "host:port of the default AS2 receiver, used when a new database is seeded",
		field: func(c *Config) *string { return &c.AS2Addr }},
	{bit: bitMetricsToken, env: "WHARF_METRICS_TOKEN", check: checkMetricsToken,
		field: func(c *Config) *string { return &c.MetricsToken }},
	{bit: bitProbeAddr, env: "WHARF_PROBE_ADDR", flag: "listen", check: checkHTTPAddr,
		usage: "host:port on which a plugin or sweeper process serves /healthz, /readyz and /metrics",
		field: func(c *Config) *string { return &c.ProbeAddr }},
	{bit: bitPayloadDir, env: "WHARF_PAYLOAD_DIR", flag: "payload-dir",
		usage: "directory payloads are stored in, shared by every process of an installation; empty for payloads in the data directory",
		field: func(c *Config) *string { return &c.PayloadDir }},
	{bit: bitNATSCreds, env: "WHARF_NATS_CREDS", field: func(c *Config) *string { return &c.NATS.CredsFile }},
	{bit: bitNATSUser, env: "WHARF_NATS_USER", field: func(c *Config) *string { return &c.NATS.User }},
	{bit: bitNATSPassword, env: "WHARF_NATS_PASSWORD", field: func(c *Config) *string { return &c.NATS.Password }},
	{bit: bitNATSToken, env: "WHARF_NATS_TOKEN", field: func(c *Config) *string { return &c.NATS.Token }},
	{bit: bitNATSTLSCA, env: "WHARF_NATS_TLS_CA", field: func(c *Config) *string { return &c.NATS.TLSCA }},
	{bit: bitNATSTLSCert, env: "WHARF_NATS_TLS_CERT", field: func(c *Config) *string { return &c.NATS.TLSCert }},
	{bit: bitNATSTLSKey, env: "WHARF_NATS_TLS_KEY", field: func(c *Config) *string { return &c.NATS.TLSKey }},
}

// logLevel has a typed field, so it sits outside the string table with the same shape.
const (
	logLevelEnv  = "WHARF_LOG_LEVEL"
	logLevelFlag = "log-level"
)

// ignoredEnv are variables under the WHARF_ prefix that the test suite reads; a process
// accepts and ignores them.
var ignoredEnv = map[string]bool{
	"WHARF_TEST_POSTGRES_URL": true,
	"WHARF_TEST_CHROMIUM":     true,
	"WHARF_TEST_S3_VERSITYGW": true,
	"WHARF_TEST_SCREENSHOTS":  true,
}

// FromEnv builds a Config from defaults and the WHARF_* entries of environ (as from
// os.Environ). An empty variable counts as unset.
func FromEnv(environ []string) (Config, error) {
	c := Default()
	var errs []error
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "WHARF_") || ignoredEnv[name] {
			continue
		}
		if name == logLevelEnv {
			if value == "" {
				continue
			}
			lvl, err := ParseLogLevel(value)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			c.LogLevel = lvl
			continue
		}
		s, ok := settingByEnv(name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown variable (known: %s)", name, strings.Join(knownEnv(), ", ")))
			continue
		}
		if value != "" {
			*s.field(&c) = value
		}
	}
	tel, err := telemetry.ParseEnv(environ)
	if err != nil {
		errs = append(errs, err)
	}
	c.Telemetry = tel
	errs = append(errs, c.problems()...)
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// Validate checks every value, naming the flag for values given as flags and the
// variable otherwise, and the bus settings against each other (a flag may set the bus
// URL the variables' credentials go with). Commands call it after ParseArgs.
func (c Config) Validate() error {
	return errors.Join(append(c.problems(), c.natsProblems()...)...)
}

func (c *Config) problems() []error {
	var errs []error
	for _, s := range settings {
		v := *s.field(c)
		name := s.env
		if c.fromFlag&s.bit != 0 {
			name = "--" + s.flag
		}
		switch {
		case v == "" && s.required:
			errs = append(errs, fmt.Errorf("%s: must not be empty", name))
		case v != "" && s.check != nil:
			if err := s.check(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	return errs
}

// ParseLogLevel reads one of debug, info, warn, error (any case).
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want one of debug, info, warn, error", s)
}

func checkDBURL(v string) error {
	const want = "must be a postgres:// or postgresql:// URL"
	u, err := url.Parse(v)
	if err != nil {
		return errors.New(want + " that parses") // the parser's message quotes the URL
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		return nil
	case "":
		return errors.New(want + " (SQLite needs no URL: leave it empty)")
	}
	return errors.New(want)
}

func checkHTTPAddr(v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("%q is not host:port", v)
	}
	if strings.ContainsAny(host, "/ ") {
		return fmt.Errorf("%q: host %q is not a host name or IP address", v, host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port must be a number from 0 to 65535", v)
	}
	return nil
}

// checkAS2Addr wants a host: the receiver binds one address, 0.0.0.0 for all of them.
func checkAS2Addr(v string) error {
	if err := checkHTTPAddr(v); err != nil {
		return err
	}
	if host, _, _ := net.SplitHostPort(v); host == "" {
		return fmt.Errorf("%q: name the host or IP address to bind (0.0.0.0 for every interface)", v)
	}
	return nil
}

func checkPublicURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return errors.New("must be an absolute http:// or https:// URL that parses")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must be an absolute http:// or https:// URL")
	case u.Host == "":
		return errors.New("must name a host")
	case u.User != nil:
		return errors.New("must not hold user information")
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(v, "?") || strings.HasSuffix(v, "#"):
		return errors.New("must not have a query or fragment")
	}
	return nil
}

func checkNATSURL(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		switch {
		case err != nil:
			return errors.New("must be nats:// or tls:// URLs, comma-separated, that parse")
		case u.Scheme != "nats" && u.Scheme != "tls":
			return errors.New("must be nats:// or tls:// URLs, comma-separated")
		case u.User != nil:
			return errors.New("must not hold credentials; set WHARF_NATS_USER and WHARF_NATS_PASSWORD, WHARF_NATS_TOKEN or WHARF_NATS_CREDS instead")
		case u.Host == "":
			return errors.New("every URL must name a host")
		}
	}
	return nil
}

func settingByEnv(name string) (setting, bool) {
	for _, s := range settings {
		if s.env == name {
			return s, true
		}
	}
	return setting{}, false
}

func knownEnv() []string {
	names := make([]string, 0, len(settings)+1)
	for _, s := range settings {
		names = append(names, s.env)
	}
	return append(names, logLevelEnv)
}

// SQLitePath is the database file used when no PostgreSQL URL is set.
func (c Config) SQLitePath() string { return filepath.Join(c.DataDir, "wharf.db") }

// IsPostgres reports whether the database is PostgreSQL rather than the SQLite file.
func (c Config) IsPostgres() bool { return c.DBURL != "" }

// PayloadsDir is the root of the local payload store.
func (c Config) PayloadsDir() string {
	if c.PayloadDir != "" {
		return c.PayloadDir
	}
	return filepath.Join(c.DataDir, "payloads")
}

// SecretsKeyPath is the master key file for sealed secrets.
func (c Config) SecretsKeyPath() string {
	return orInDataDir(c.SecretsKeyFile, c.DataDir, "secrets.key")
}

// SessionKeyPath is the key file for sealed session cookies.
func (c Config) SessionKeyPath() string {
	return orInDataDir(c.SessionKeyFile, c.DataDir, "session.key")
}

// AuditKeyPath is the HMAC key file of the audit hash chain.
func (c Config) AuditKeyPath() string { return orInDataDir(c.AuditKeyFile, c.DataDir, "audit.key") }

func orInDataDir(set, dataDir, name string) string {
	if set != "" {
		return set
	}
	return filepath.Join(dataDir, name)
}

// BaseURL is the URL links and partner-facing addresses are built from: PublicURL without
// a trailing slash when set, else derived from HTTPAddr when that is a loopback address.
// A server reachable from other hosts must be told its public URL, because a guess from
// the bind address would be wrong behind any proxy.
func (c Config) BaseURL() (string, error) {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/"), nil
	}
	host, port, err := net.SplitHostPort(c.HTTPAddr)
	if err != nil {
		return "", fmt.Errorf("derive public URL: %w", err)
	}
	if !isLoopback(host) {
		return "", fmt.Errorf("WHARF_PUBLIC_URL (or --public-url) is required when the HTTP address %s is not a loopback address", c.HTTPAddr)
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// minMetricsToken is the shortest bearer token /metrics accepts as its protection.
const minMetricsToken = 16

// checkMetricsToken wants a token a scraper can send in a header: at least
// minMetricsToken visible ASCII characters. The message never repeats the value.
func checkMetricsToken(v string) error {
	if len(v) < minMetricsToken {
		return fmt.Errorf("the token must have at least %d characters", minMetricsToken)
	}
	for _, r := range v {
		if r <= ' ' || r > '~' {
			return errors.New("the token must be visible ASCII characters without spaces")
		}
	}
	return nil
}
