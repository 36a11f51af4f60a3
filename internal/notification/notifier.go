package notification

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"wharf/internal/alert"
	"wharf/internal/delivery"
	"wharf/internal/httptarget"
	"wharf/internal/module"
	"wharf/internal/stdwebhook"
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
		key, err := stdwebhook.Key(cfg.SigningSecret)
		if err != nil {
			return nil, fmt.Errorf("notification-webhook %s: signing_secret: %w", name, err)
		}
		n.key = key
	}
	n.client = httptarget.NewClient(time.Duration(cfg.Timeout), 0)
	n.client.Transport = rt.core.Telemetry.Transport(n.client.Transport, "notification-webhook POST")
	return n, nil
}

// DeliveryQueue is the module's notification rows.
func (n *Notifier) DeliveryQueue() delivery.Queue { return n.rt.q }

// Deliver sends one notification row once. Reasons name statuses and failure kinds,
// never the URL, a header or the response.
func (n *Notifier) Deliver(ctx context.Context, at delivery.Attempt) delivery.Result {
	a, err := n.rt.alertOf(ctx, at.Delivery.ID)
	if err != nil {
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot read the alert"))
	}
	if n.now().Sub(a.Time) > MaxAge {
		return delivery.Permanent(delivery.ClassInternal, fmt.Errorf("not sent: the alert is older than %s", MaxAge))
	}
	r, err := Render(n.cfg.Format, a, n.rt.core.BaseURL)
	if err != nil {
		return delivery.Permanent(delivery.ClassInternal, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.cfg.URL, bytes.NewReader(r.Body))
	if err != nil {
		return delivery.Permanent(delivery.ClassInternal, errors.New("cannot build the request"))
	}
	for k, v := range n.cfg.Headers {
		req.Header.Set(k, v)
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", r.ContentType)
	req.Header.Set("User-Agent", n.rt.core.ProductName())
	if n.key != nil && n.cfg.Format.Signed() {
		// The id is the same on every attempt of a row, so a receiver can drop a repeat.
		stdwebhook.Sign(req.Header, n.key, "wharf-notification-"+strconv.FormatInt(at.Delivery.ID, 10), n.now(), r.Body)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return httptarget.Failure(ctx, err, time.Duration(n.cfg.Timeout), httptarget.TransportReason)
	}
	defer httptarget.Drain(resp)
	return httptarget.Classify(resp, n.now())
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
