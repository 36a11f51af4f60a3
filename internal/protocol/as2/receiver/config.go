package receiver

import (
	"fmt"
	"net"
	"strings"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

var _ module.Config = (*Config)(nil)

// Config is the configuration of an as2-receiver instance.
type Config struct {
	// Bind is the address the listener binds to.
	Bind string `json:"bind"`
	// Port is the TCP port; 0 lets the system choose (tests).
	Port int `json:"port"`
	// Path receives AS2 messages.
	Path string `json:"path"`
	// MDNPath receives the asynchronous MDNs partners send for our messages.
	MDNPath string `json:"mdn_path"`
	// TLSCertificateID, when set, serves HTTPS with that stored certificate and its key:
	// on Port, or on TLSPort when that is set.
	TLSCertificateID *int64 `json:"tls_certificate_id,omitempty" wharf:"certificate"`
	// TLSPort, when set, opens a second listener on Bind for HTTPS, so Port keeps
	// serving plain HTTP: partners of either kind reach one instance. 0 lets the system
	// choose (tests).
	TLSPort *int `json:"tls_port,omitempty"`
	// MaxConcurrentRequests bounds the requests handled at once; beyond it as many more
	// wait briefly for a turn, and a request that gets none is answered 503 without its
	// body being read.
	MaxConcurrentRequests int `json:"max_concurrent_requests"`
	// MaxBodyMiB bounds a request body when neither profile sets a size limit.
	MaxBodyMiB int `json:"max_body_mib"`
	// ReadHeaderTimeout bounds reading a request's header section.
	ReadHeaderTimeout delivery.Duration `json:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout delivery.Duration `json:"read_timeout"`
	// WriteTimeout bounds handling a request and writing its answer, from the end of
	// the header section.
	WriteTimeout delivery.Duration `json:"write_timeout"`
	// IdleTimeout closes a kept-alive connection with no request.
	IdleTimeout delivery.Duration `json:"idle_timeout"`
	// BodyIdleTimeout ends a request whose body brings no bytes for this long, and is
	// the grace before MinBodyBytesPerSecond counts.
	BodyIdleTimeout delivery.Duration `json:"body_idle_timeout"`
	// MinBodyBytesPerSecond is the average rate a body must keep up once
	// BodyIdleTimeout has passed since it began; 0 sets no minimum. A client that
	// trickles its body is cut off rather than holding a request slot for the whole
	// read_timeout.
	MinBodyBytesPerSecond int64 `json:"min_body_bytes_per_second"`
	// MaxRequestsPerAddress bounds the requests one remote address has in progress or
	// waiting; past it a request is answered 429 at once.
	MaxRequestsPerAddress int `json:"max_requests_per_address"`
	// MaxRequestsPerPartner bounds the requests naming one partner (by AS2-From) in
	// progress; past it a request is answered 429 before its body is read.
	MaxRequestsPerPartner int `json:"max_requests_per_partner"`
	// MaxDecompressionRatio bounds a compressed layer, past its first mebibyte, to this
	// many times its compressed size (besides the size limit).
	MaxDecompressionRatio int `json:"max_decompression_ratio"`
}

// Receiver defaults and limits.
const (
	DefaultBind                  = "127.0.0.1"
	DefaultPort                  = 8081
	DefaultPath                  = "/as2"
	DefaultMDNPath               = "/as2/mdn"
	DefaultMaxConcurrentRequests = 32
	MaxConcurrentRequestsLimit   = 4096
	DefaultMaxBodyMiB            = 512
	MaxBodyMiBLimit              = 4096
	DefaultReadHeaderTimeout     = 30 * time.Second
	DefaultReadTimeout           = 10 * time.Minute
	DefaultWriteTimeout          = 15 * time.Minute
	DefaultIdleTimeout           = 2 * time.Minute
	DefaultBodyIdleTimeout       = 20 * time.Second
	DefaultMinBodyBytesPerSecond = 8 << 10
	MaxMinBodyBytesPerSecond     = 1 << 30
	// One source or partner may take half the default slots: a flood from it leaves
	// the other half to everyone else.
	DefaultMaxRequestsPerAddress = 16
	DefaultMaxRequestsPerPartner = 16
	DefaultMaxDecompressionRatio = 100
	MinDecompressionRatio        = 10
	MaxDecompressionRatio        = 100000
	maxTimeout                   = 24 * time.Hour
)

// NewConfig returns a receiver config with its defaults set.
func NewConfig() module.Config { return newConfig() }

func newConfig() *Config {
	return &Config{
		Bind:                  DefaultBind,
		Port:                  DefaultPort,
		Path:                  DefaultPath,
		MDNPath:               DefaultMDNPath,
		MaxConcurrentRequests: DefaultMaxConcurrentRequests,
		MaxBodyMiB:            DefaultMaxBodyMiB,
		ReadHeaderTimeout:     delivery.Duration(DefaultReadHeaderTimeout),
		ReadTimeout:           delivery.Duration(DefaultReadTimeout),
		WriteTimeout:          delivery.Duration(DefaultWriteTimeout),
		IdleTimeout:           delivery.Duration(DefaultIdleTimeout),
		BodyIdleTimeout:       delivery.Duration(DefaultBodyIdleTimeout),
		MinBodyBytesPerSecond: DefaultMinBodyBytesPerSecond,
		MaxRequestsPerAddress: DefaultMaxRequestsPerAddress,
		MaxRequestsPerPartner: DefaultMaxRequestsPerPartner,
		MaxDecompressionRatio: DefaultMaxDecompressionRatio,
	}
}

// Validate checks the config; errors are *persistence.FieldError.
func (c *Config) Validate() error {
	var errs persistence.FieldErrors
	if c.Bind == "" {
		errs.Add("bind", "required")
	}
	if net.ParseIP(c.Bind) == nil && !validHostname(c.Bind) {
		errs.Add("bind", "must be an IP address or a host name")
	}
	if c.Port < 0 || c.Port > 65535 {
		errs.Add("port", "must be between 0 and 65535")
	}
	if err := checkPath(c.Path); err != nil {
		errs.Add("path", err.Error())
	}
	if err := checkPath(c.MDNPath); err != nil {
		errs.Add("mdn_path", err.Error())
	}
	if c.MDNPath == c.Path {
		errs.Add("mdn_path", "must differ from the message path")
	}
	if c.TLSCertificateID != nil && *c.TLSCertificateID <= 0 {
		errs.Add("tls_certificate_id", "must be a certificate id")
	}
	if p := c.TLSPort; p != nil {
		switch {
		case *p < 0 || *p > 65535:
			errs.Add("tls_port", "must be between 0 and 65535")
		case *p != 0 && *p == c.Port:
			errs.Add("tls_port", "must differ from the port, which serves plain HTTP when a TLS port is set")
		case c.TLSCertificateID == nil:
			errs.Add("tls_port", "serves HTTPS with a TLS certificate: choose one as well")
		}
	}
	if c.MaxConcurrentRequests < 1 || c.MaxConcurrentRequests > MaxConcurrentRequestsLimit {
		errs.Add("max_concurrent_requests", fmt.Sprintf("must be between 1 and %d", MaxConcurrentRequestsLimit))
	}
	if c.MaxBodyMiB < 1 || c.MaxBodyMiB > MaxBodyMiBLimit {
		errs.Add("max_body_mib", fmt.Sprintf("must be between 1 and %d", MaxBodyMiBLimit))
	}
	for _, n := range []struct {
		field string
		v     int
	}{
		{"max_requests_per_address", c.MaxRequestsPerAddress},
		{"max_requests_per_partner", c.MaxRequestsPerPartner},
	} {
		if n.v < 1 || n.v > MaxConcurrentRequestsLimit {
			errs.Add(n.field, fmt.Sprintf("must be between 1 and %d", MaxConcurrentRequestsLimit))
		}
	}
	if c.MinBodyBytesPerSecond < 0 || c.MinBodyBytesPerSecond > MaxMinBodyBytesPerSecond {
		errs.Add("min_body_bytes_per_second", fmt.Sprintf("must be between 0 (no minimum) and %d", MaxMinBodyBytesPerSecond))
	}
	if c.MaxDecompressionRatio < MinDecompressionRatio || c.MaxDecompressionRatio > MaxDecompressionRatio {
		errs.Add("max_decompression_ratio", fmt.Sprintf("must be between %d and %d", MinDecompressionRatio, MaxDecompressionRatio))
	}
	for _, d := range []struct {
		field string
		v     delivery.Duration
	}{
		{"read_header_timeout", c.ReadHeaderTimeout},
		{"read_timeout", c.ReadTimeout},
		{"write_timeout", c.WriteTimeout},
		{"idle_timeout", c.IdleTimeout},
		{"body_idle_timeout", c.BodyIdleTimeout},
	} {
		if d.v <= 0 {
			errs.Add(d.field, "must be positive")
		}
		if time.Duration(d.v) > maxTimeout {
			errs.Add(d.field, "must be at most 24h")
		}
	}
	if c.ReadHeaderTimeout > c.ReadTimeout {
		errs.Add("read_header_timeout", "must not be longer than the read timeout")
	}
	if c.BodyIdleTimeout > c.ReadTimeout {
		errs.Add("body_idle_timeout", "must not be longer than the read timeout")
	}
	return errs.Err()
}

// checkPath accepts an absolute URL path without query, fragment or dot segments.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("required")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("must start with /")
	case len(p) > 256:
		return fmt.Errorf("longer than 256 bytes")
	case strings.ContainsAny(p, "?#{}% \t\r\n"):
		return fmt.Errorf("must be a plain path without query, fragment, spaces or escapes")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("must not contain . or .. segments")
		}
	}
	if p != "/" && strings.HasSuffix(p, "/") {
		return fmt.Errorf("must not end with /")
	}
	return nil
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// addr is the listener address.
func (c *Config) addr() string { return net.JoinHostPort(c.Bind, fmt.Sprint(c.Port)) }

// Listeners are the receiver's listeners: the address and whether it serves HTTPS. Port
// serves HTTPS when a certificate is set and no TLSPort is; with TLSPort, Port serves
// plain HTTP and TLSPort HTTPS.
func (c *Config) Listeners() []ListenerSpec {
	if c.TLSPort == nil {
		return []ListenerSpec{{Addr: c.addr(), TLS: c.TLSCertificateID != nil}}
	}
	return []ListenerSpec{
		{Addr: c.addr()},
		{Addr: net.JoinHostPort(c.Bind, fmt.Sprint(*c.TLSPort)), TLS: true},
	}
}

// ListenerSpec is one listener of the receiver.
type ListenerSpec struct {
	Addr string
	TLS  bool
}

// Scheme is the listener's URL scheme.
func (l ListenerSpec) Scheme() string {
	if l.TLS {
		return "https"
	}
	return "http"
}
