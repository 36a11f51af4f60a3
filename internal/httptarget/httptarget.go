// Package httptarget is what the targets that POST to a configured URL (http-poster and
// notification-webhook) share: checking the URL and the extra headers of their config,
// the client they send with, and how an answer or a transport error becomes a delivery
// result. Messages never repeat the URL, a header value or a response body.
package httptarget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"wharf/internal/delivery"
)

// Limits of a target's URL and of one extra header value.
const (
	MaxURLLength   = 4096
	MaxHeaderValue = 8 << 10
)

// CheckURL checks a target URL: http or https, naming a host, without credentials or a
// fragment. headersField names the config field that carries credentials instead.
func CheckURL(s, headersField string) error {
	if s == "" {
		return fmt.Errorf("required")
	}
	if len(s) > MaxURLLength {
		return fmt.Errorf("longer than %d bytes", MaxURLLength)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an http or https URL")
	case u.Hostname() == "":
		return fmt.Errorf("must name a host")
	case u.User != nil:
		return fmt.Errorf("must not carry credentials; use %s (Authorization)", headersField)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("must not have a fragment")
	}
	return nil
}

// transportHeaders are set by the transport or by every target itself.
var transportHeaders = []string{
	"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
	"Upgrade", "Expect", "Content-Type",
}

// CheckHeaderName checks the name of an extra request header: an RFC 9110 token, neither
// a header the transport sets, nor one of reserved (canonical names, set by the target;
// setter names it in the message), nor under the X-Wharf- prefix.
func CheckHeaderName(name, setter string, reserved ...string) error {
	if name == "" {
		return fmt.Errorf("empty header name")
	}
	if !IsHeaderName(name) {
		return fmt.Errorf("header name %q has a character not allowed in a header name", name)
	}
	canon := http.CanonicalHeaderKey(name)
	if slices.Contains(transportHeaders, canon) || slices.Contains(reserved, canon) {
		return fmt.Errorf("header %s is set by the %s or the transport", canon, setter)
	}
	if strings.HasPrefix(canon, "X-Wharf-") {
		return fmt.Errorf("header %s: the X-Wharf- prefix is reserved", canon)
	}
	return nil
}

// CheckHeaderValue checks the value of an extra request header; the message does not
// repeat it, since it may be a credential.
func CheckHeaderValue(v string) error {
	if len(v) > MaxHeaderValue {
		return fmt.Errorf("value longer than %d bytes", MaxHeaderValue)
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return fmt.Errorf("value contains a control character")
		}
	}
	return nil
}

// IsHeaderName reports whether name is a header field name: one or more RFC 9110 token
// characters.
func IsHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return false
		}
	}
	return true
}

// isTokenChar reports RFC 9110 token characters.
func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// NewClient returns a client that bounds an attempt by timeout, speaks TLS 1.2 or later
// and never follows a redirect (a redirect is the receiver's answer, classified by
// Classify). idlePerHost, when positive, is how many idle connections it keeps.
func NewClient(timeout time.Duration, idlePerHost int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if idlePerHost > 0 {
		tr.MaxIdleConnsPerHost = idlePerHost
		tr.MaxIdleConns = max(tr.MaxIdleConns, idlePerHost)
	}
	tr.ResponseHeaderTimeout = timeout
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Drain reads a little of what is left of the body, so the connection can be reused, and
// closes it.
func Drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// Classify turns an answer into a result: 2xx is delivered; every other answer is a
// failure of its class for the retry policy to judge: 408, 425 and 429 are
// http_throttled (at a Retry-After when there is one), 5xx is http_5xx (likewise), and
// the rest, redirects included, is http_4xx, which the default policy never retries.
// The reason is the status line only.
func Classify(resp *http.Response, now time.Time) delivery.Result {
	code := resp.StatusCode
	var class delivery.ErrorClass
	err := delivery.HTTPStatusError(code)
	switch {
	case code >= 200 && code < 300:
		return delivery.Delivered()
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		class = delivery.ClassThrottled
	case code >= 500 && code < 600:
		class = delivery.ClassHTTP5xx
	case code >= 300 && code < 400:
		return delivery.Transient(delivery.ClassHTTP4xx, fmt.Errorf("redirect refused (status %d)", code))
	default:
		return delivery.Transient(delivery.ClassHTTP4xx, err)
	}
	if at, ok := delivery.RetryAfter(resp.Header.Get("Retry-After"), now); ok {
		return delivery.RetryAt(at, class, err)
	}
	return delivery.Transient(class, err)
}

// Failure turns an error of Client.Do into a retry: an interrupted attempt, a timeout
// (naming timeout), or a transport failure worded by reason, which must not name the
// URL or the address.
func Failure(ctx context.Context, err error, timeout time.Duration, reason func(error) string) delivery.Result {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return delivery.Transient(delivery.ClassTransport, errors.New("interrupted"))
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return delivery.Transient(delivery.ClassTimeout, fmt.Errorf("no response within %s", timeout))
	}
	return delivery.Transient(delivery.ClassTransport, errors.New(reason(err)))
}
