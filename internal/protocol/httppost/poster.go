// Package httppost is the http-poster module: a target that POSTs each message's document
// to one configured URL. 2xx is delivered, or awaits the system's completion report for
// the statuses its handoff block names; transport errors, timeouts, 408, 425, 429 and
// 5xx are retried per the instance's policy (a Retry-After is honoured); redirects and
// other statuses fail. Reasons never carry the URL, a header value or the response body,
// but for the reference a handoff answer names.
package httppost

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/httptarget"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/product"
)

func init() {
	module.Register(module.Module{
		Name: "httppost",
		Plugins: []module.Plugin{{
			Type:      persistence.PluginHTTPPoster,
			Role:      module.RoleTarget,
			NewConfig: func() module.Config { return NewPosterConfig() },
			NewTarget: func(env module.Env, name persistence.InstanceName, cfg module.Config) (delivery.Deliverer, error) {
				c, ok := cfg.(*PosterConfig)
				if !ok {
					return nil, fmt.Errorf("http-poster %s: config is %T, want *PosterConfig", name, cfg)
				}
				logger := env.Logger
				if logger != nil {
					logger = logger.With("instance", string(name))
				}
				p, err := NewPoster(c, logger)
				if err != nil {
					return nil, err
				}
				p.product = env.ProductName
				p.client.Transport = env.Telemetry.Transport(p.client.Transport, "http-poster POST")
				return p, nil
			},
		}},
	})
}

var (
	_ delivery.Deliverer    = (*Poster)(nil)
	_ module.Config         = (*PosterConfig)(nil)
	_ module.WriteOnly      = (*PosterConfig)(nil)
	_ module.SecretBinder   = (*PosterConfig)(nil)
	_ delivery.TargetConfig = (*PosterConfig)(nil)
)

// Metadata headers sent with every POST.
const (
	HeaderMessageID     = "X-Wharf-Message-Id"
	HeaderFrom          = "X-Wharf-From"
	HeaderTo            = "X-Wharf-To"
	HeaderFilename      = "X-Wharf-Filename" // percent-encoded UTF-8
	HeaderSHA256        = "X-Wharf-Sha256"
	HeaderCorrelationID = "X-Wharf-Correlation-Id"
	HeaderOriginEventID = "X-Wharf-Origin-Event-Id"
	HeaderAttempt       = "X-Wharf-Attempt"
	// HeaderIdempotencyKey is wharf-<message id>-<delivery id>: the same on every attempt of
	// one delivery, so a receiver can recognise a repeat.
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Poster is a running http-poster instance.
type Poster struct {
	url     string
	host    string
	header  http.Header // configured, secret and content type headers
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger
	// handoffCfg says which answers hand off and where their reference is.
	handoffCfg HandoffConfig
	// product names Wharf in User-Agent, per the hide_version setting; nil shows the
	// version.
	product func() string
}

func (p *Poster) productName() string {
	if p.product == nil {
		return product.String(false)
	}
	return p.product()
}

// NewPoster builds a poster from a validated config.
func NewPoster(cfg *PosterConfig, logger *slog.Logger) (*Poster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("http-poster: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	u, _ := url.Parse(cfg.URL)
	timeout := time.Duration(cfg.Timeout)
	opts := cfg.Options()

	h := http.Header{}
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	for k, v := range cfg.SecretHeaders {
		h.Set(k, v)
	}
	h.Set("Content-Type", cfg.ContentType)

	return &Poster{
		url:        cfg.URL,
		host:       u.Host,
		header:     h,
		client:     httptarget.NewClient(timeout, max(opts.MaxConcurrent, 2)),
		timeout:    timeout,
		now:        time.Now,
		log:        logger.With("plugin", string(persistence.PluginHTTPPoster)),
		handoffCfg: cfg.Handoff,
	}, nil
}

// Close releases idle connections.
func (p *Poster) Close() { p.client.CloseIdleConnections() }

// Deliver POSTs the document once.
func (p *Poster) Deliver(ctx context.Context, a delivery.Attempt) delivery.Result {
	body, err := a.Open(ctx)
	if err != nil {
		p.log.WarnContext(ctx, "cannot open a payload", "error", err)
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot read the payload"))
	}
	defer body.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, nil)
	if err != nil {
		return delivery.Permanent(delivery.ClassInternal, errors.New("cannot build the request"))
	}
	req.Header = p.header.Clone()
	req.Header.Set("User-Agent", p.productName())
	setMetadata(req.Header, a)
	if a.Message.Size > 0 {
		req.Body = &payloadReader{r: body}
		req.ContentLength = a.Message.Size
	} else {
		req.Body = http.NoBody
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return p.failure(ctx, err)
	}
	defer httptarget.Drain(resp)
	if slices.Contains(p.handoffCfg.Statuses, resp.StatusCode) {
		return p.handoff(resp)
	}
	return httptarget.Classify(resp, p.now())
}

func setMetadata(h http.Header, a delivery.Attempt) {
	m := a.Message
	h.Set(HeaderMessageID, strconv.FormatInt(m.ID, 10))
	h.Set(HeaderFrom, string(m.From))
	h.Set(HeaderTo, string(m.To))
	if m.OriginalFileName != "" {
		name := string(m.OriginalFileName)
		h.Set(HeaderFilename, percentEncode(name))
		h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, asciiFallback(name), percentEncode(name)))
	}
	if m.SHA256 != "" {
		h.Set(HeaderSHA256, m.SHA256)
	}
	if m.CorrelationID != "" {
		h.Set(HeaderCorrelationID, headerSafe(m.CorrelationID))
	}
	if m.OriginEventID != "" {
		h.Set(HeaderOriginEventID, headerSafe(m.OriginEventID))
	}
	if a.Number > 0 {
		h.Set(HeaderAttempt, strconv.Itoa(a.Number))
	}
	h.Set(HeaderIdempotencyKey, fmt.Sprintf("wharf-%d-%d", m.ID, a.Delivery.ID))
}

// errPayloadRead marks a failure to read the document while sending it.
var errPayloadRead = errors.New("cannot read the payload")

type payloadReader struct{ r io.ReadCloser }

func (p *payloadReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, errPayloadRead
	}
	return n, err
}

func (p *payloadReader) Close() error { return p.r.Close() }

// failure classifies an error of Client.Do without naming the URL or the address.
func (p *Poster) failure(ctx context.Context, err error) delivery.Result {
	return httptarget.Failure(ctx, err, p.timeout, func(err error) string {
		if errors.Is(err, errPayloadRead) {
			return errPayloadRead.Error()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return p.scrub(transportReason(err))
	})
}

// transportReason words a transport error without addresses or host names.
func transportReason(err error) string {
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "DNS: host not found"
		}
		return "DNS lookup failed"
	case errors.As(err, &unknownCA):
		return "TLS: certificate signed by an unknown authority"
	case errors.As(err, &hostErr):
		return "TLS: certificate not valid for the host"
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "TLS: certificate expired or not yet valid"
		}
		return "TLS: invalid certificate"
	case errors.As(err, &recErr):
		return "TLS: the server did not answer with TLS"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before a response"
	case errors.As(err, &opErr):
		return opErr.Op + ": " + innermost(opErr.Err).Error()
	}
	return err.Error()
}

func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// scrub removes the URL and host from a reason, whatever produced it, and bounds it.
func (p *Poster) scrub(reason string) string {
	for _, s := range []string{p.url, p.host} {
		if s != "" {
			reason = strings.ReplaceAll(reason, s, "(endpoint)")
		}
	}
	if hostname, _, err := net.SplitHostPort(p.host); err == nil && hostname != "" {
		reason = strings.ReplaceAll(reason, hostname, "(endpoint)")
	}
	if len(reason) > 200 {
		reason = reason[:200] + "…"
	}
	return "transport: " + reason
}
