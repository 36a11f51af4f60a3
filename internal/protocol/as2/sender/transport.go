package sender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"wharf/internal/protocol/as2/profile"
	"wharf/internal/telemetry"
)

// clients keeps one HTTP client per partner, so connections are reused between messages,
// and replaces it when the partner's timeouts or TLS trust change.
type clients struct {
	// idle is how many idle connections a partner's client keeps: as many as the
	// attempts that may run at once, so a busy partner is not sent each message on a
	// new connection (net/http keeps two by default).
	idle int
	// tel wraps each client's transport in a traced one.
	tel *telemetry.Telemetry

	mu sync.Mutex
	m  map[string]clientEntry
}

type clientEntry struct {
	key    string
	client *http.Client
	// tr is the client's own transport under the tracing one, which cannot close idle
	// connections itself.
	tr *http.Transport
}

// get returns the client for the partner's profile, trusting what it names (see
// profile.Outbound.TLSConfig).
func (c *clients) get(partner string, out profile.Outbound) *http.Client {
	r := out.Remote
	key := fmt.Sprint(r.UpdatedAt.UnixNano(), r.ConnectTimeoutSeconds, r.RequestTimeoutSeconds, r.TLSTrustCertificateIDs,
		r.TLSTrust, r.TLSPinnedSHA256)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[partner]; ok {
		if e.key == key {
			return e.client
		}
		// Attempts still using the old client finish on their connections.
		e.tr.CloseIdleConnections()
	}
	if c.m == nil {
		c.m = map[string]clientEntry{}
	}
	connect := time.Duration(r.ConnectTimeoutSeconds) * time.Second
	if connect <= 0 {
		connect = 10 * time.Second
	}
	request := time.Duration(r.RequestTimeoutSeconds) * time.Second
	if request <= 0 {
		request = 2 * time.Minute
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = connect
	if c.idle > 0 {
		tr.MaxIdleConnsPerHost = c.idle
		tr.MaxIdleConns = max(tr.MaxIdleConns, c.idle)
	}
	tr.TLSClientConfig = out.TLSConfig()
	// AS2 products speak HTTP/1.1; a few misread HTTP/2.
	tr.ForceAttemptHTTP2 = false
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	client := &http.Client{
		Transport: c.tel.Transport(tr, "as2 send"),
		// The timeout covers the whole exchange, a synchronous MDN included.
		Timeout: request,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	c.m[partner] = clientEntry{key: key, client: client, tr: tr}
	return client
}

// closeAll releases idle connections.
func (c *clients) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.m {
		e.tr.CloseIdleConnections()
	}
}

// transportReason words an error of Client.Do without the URL, host or address, which do
// not belong in a delivery's history. A refused server certificate is followed by the
// profile's trust setting that refused it.
func transportReason(err error, r profile.Remote) string {
	endpoint := r.EndpointURL
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var (
		dnsErr  *net.DNSError
		unknown x509.UnknownAuthorityError
		hostErr x509.HostnameError
		invalid x509.CertificateInvalidError
		recErr  tls.RecordHeaderError
		opErr   *net.OpError
	)
	reason := ""
	switch {
	case errors.As(err, &dnsErr):
		reason = "DNS lookup failed"
		if dnsErr.IsNotFound {
			reason = "DNS: host not found"
		}
	case errors.Is(err, profile.ErrPinMismatch):
		reason = "TLS: " + err.Error() + "; " + r.TrustHint()
	case errors.As(err, &unknown):
		reason = "TLS: certificate signed by an unknown authority; " + r.TrustHint()
	case errors.As(err, &hostErr):
		reason = "TLS: certificate not valid for the host"
	case errors.As(err, &invalid):
		reason = "TLS: invalid certificate"
		if invalid.Reason == x509.Expired {
			reason = "TLS: certificate expired or not yet valid"
		}
	case errors.As(err, &recErr):
		reason = "TLS: the server did not answer with TLS"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		reason = "connection reset by peer"
	case errors.Is(err, syscall.EHOSTUNREACH):
		reason = "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		reason = "network unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		reason = "connection closed before a response"
	case errors.As(err, &opErr):
		reason = opErr.Op + ": " + innermost(opErr.Err).Error()
	default:
		reason = err.Error()
	}
	return "transport: " + scrub(reason, endpoint)
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

// scrub removes the endpoint's URL and host from a text.
func scrub(s, endpoint string) string {
	if endpoint == "" {
		return s
	}
	s = strings.ReplaceAll(s, endpoint, "(endpoint)")
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		s = strings.ReplaceAll(s, u.Host, "(endpoint)")
		if h := u.Hostname(); h != "" {
			s = strings.ReplaceAll(s, h, "(endpoint)")
		}
	}
	return s
}

// isTimeout reports a request that ran out of time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
