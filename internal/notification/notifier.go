package notification

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"wharf/internal/alert"
	"wharf/internal/delivery"
	"wharf/internal/module"
)

// Notifier is a running notification-webhook instance: the delivery engine's worker
// claims its rows from the module's queue and hands each attempt to Deliver.
type Notifier struct {
	rt     *Runtime
	name   string
	cfg    *Config
	key    []byte // nil: unsigned
	client *http.Client
	now    func() time.Time
}

var (
	_ delivery.Deliverer  = (*Notifier)(nil)
	_ delivery.QueueOwner = (*Notifier)(nil)
)

func newNotifier(rt *Runtime, name string, cfg *Config) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("notification-webhook %s: %w", name, err)
	}
	n := &Notifier{rt: rt, name: name, cfg: cfg, now: time.Now}
	if cfg.SigningSecret != "" {
		key, err := secretKey(cfg.SigningSecret)
		if err != nil {
			return nil, fmt.Errorf("notification-webhook %s: signing_secret: %w", name, err)
		}
		n.key = key
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	tr.ResponseHeaderTimeout = time.Duration(cfg.Timeout)
	n.client = &http.Client{
		Transport: tr,
		Timeout:   time.Duration(cfg.Timeout),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return n, nil
}

// DeliveryQueue is the module's notification rows.
func (n *Notifier) DeliveryQueue() delivery.Queue { return n.rt.q }

// Deliver sends one notification row once. Reasons name statuses and failure kinds,
// never the URL, a header or the response.
func (n *Notifier) Deliver(ctx context.Context, at delivery.Attempt) delivery.Result {
	a, err := n.rt.alertOf(ctx, at.Delivery.ID)
	if err != nil {
		return delivery.Transient(delivery.ClassTransport, errors.New("cannot read the alert"))
	}
	if n.now().Sub(a.Time) > MaxAge {
		return delivery.Permanent(fmt.Errorf("not sent: the alert is older than %s", MaxAge))
	}
	r, err := Render(n.cfg.Format, a, n.rt.core.BaseURL)
	if err != nil {
		return delivery.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.cfg.URL, bytes.NewReader(r.Body))
	if err != nil {
		return delivery.Permanent(errors.New("cannot build the request"))
	}
	for k, v := range n.cfg.Headers {
		req.Header.Set(k, v)
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", r.ContentType)
	req.Header.Set("User-Agent", "Wharf")
	if n.key != nil && n.cfg.Format.Signed() {
		// The id is the same on every attempt of a row, so a receiver can drop a repeat.
		Sign(req.Header, n.key, "wharf-notification-"+strconv.FormatInt(at.Delivery.ID, 10), n.now(), r.Body)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return n.failure(ctx, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return delivery.Delivered()
	case code >= 300 && code < 400:
		return delivery.Permanent(fmt.Errorf("redirect refused (status %d)", code))
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500 && code < 600:
		class := delivery.ClassHTTP5xx
		if code < 500 {
			class = delivery.ClassHTTP4xx
		}
		err := delivery.HTTPStatusError(code)
		if t, ok := delivery.RetryAfter(resp.Header.Get("Retry-After"), n.now()); ok {
			return delivery.RetryAt(t, class, err)
		}
		return delivery.Transient(class, err)
	}
	return delivery.Permanent(delivery.HTTPStatusError(code))
}

// failure words a transport error without the address it went to.
func (n *Notifier) failure(ctx context.Context, err error) delivery.Result {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return delivery.Transient(delivery.ClassTransport, errors.New("interrupted"))
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return delivery.Transient(delivery.ClassTimeout, fmt.Errorf("no response within %s", time.Duration(n.cfg.Timeout)))
	}
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	reason := "transport: the request failed"
	switch {
	case errors.As(err, &dnsErr):
		reason = "transport: DNS lookup failed"
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		reason = "transport: the server's TLS certificate was refused"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "transport: connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		reason = "transport: connection reset by peer"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		reason = "transport: connection closed before a response"
	}
	return delivery.Transient(delivery.ClassTransport, errors.New(reason))
}

// alertOf reads the alert a notification row sends.
func (rt *Runtime) alertOf(ctx context.Context, id int64) (alert.Alert, error) {
	var body string
	err := rt.db.Read(ctx, func(tx module.Tx) error {
		return tx.QueryRow(ctx, `SELECT a.body FROM notifications n JOIN alerts a ON a.id = n.alert_id WHERE n.id = ?`, id).Scan(&body)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return alert.Alert{}, fmt.Errorf("notification %d: not found", id)
	}
	if err != nil {
		return alert.Alert{}, fmt.Errorf("read notification %d: %w", id, err)
	}
	return alert.Decode([]byte(body))
}
