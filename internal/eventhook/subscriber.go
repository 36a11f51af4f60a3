package eventhook

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/httptarget"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/rowqueue"
	"wharf/internal/stdwebhook"
)

// Subscriber is a running event-webhook instance: the delivery engine's worker claims
// its rows and hands each attempt to Deliver.
type Subscriber struct {
	rt     *Runtime
	name   string
	cfg    *Config
	client *http.Client
	q      *gatedQueue
}

var (
	_ delivery.Deliverer  = (*Subscriber)(nil)
	_ delivery.QueueOwner = (*Subscriber)(nil)
)

func newSubscriber(rt *Runtime, name string, cfg *Config) (*Subscriber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("event-webhook %s: %w", name, err)
	}
	s := &Subscriber{rt: rt, name: name, cfg: cfg}
	s.client = httptarget.NewClient(time.Duration(cfg.Timeout), 0)
	s.client.Transport = rt.core.Telemetry.Transport(s.client.Transport, "event-webhook POST")
	s.q = &gatedQueue{rt: rt, Queue: rowqueue.Queue{DB: rt.db, Table: "event_webhook_deliveries", OnOutcomes: s.outcomes}}
	return s, nil
}

// DeliveryQueue is the instance's rows of the delivery log.
func (s *Subscriber) DeliveryQueue() delivery.Queue { return s.q }

// webhookID is the webhook-id of a row: made of the event id, the same on every attempt
// and for every subscription, so a receiver drops a repeat.
func webhookID(eventID sql.NullInt64, rowID int64) string {
	if eventID.Valid {
		return "wharf-event-" + strconv.FormatInt(eventID.Int64, 10)
	}
	return "wharf-test-" + strconv.FormatInt(rowID, 10)
}

// Deliver sends one row once. Reasons name statuses and failure kinds, never the URL or
// the response.
func (s *Subscriber) Deliver(ctx context.Context, at delivery.Attempt) delivery.Result {
	var body string
	var eventID sql.NullInt64
	err := s.rt.db.Read(ctx, func(tx module.Tx) error {
		return tx.QueryRow(ctx, `SELECT body, event_id FROM event_webhook_deliveries WHERE id = ?`, at.Delivery.ID).Scan(&body, &eventID)
	})
	if err != nil {
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot read the event"))
	}
	now := s.rt.clock()
	// The secrets come from the stored record, so a rotation applies to the next attempt
	// of every process without a restart.
	_, stored, err := s.rt.load(ctx, persistence.InstanceName(s.name))
	if err != nil {
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot read the subscription's secret"))
	}
	keys, err := stored.keys(now)
	if err != nil {
		return delivery.Permanent(delivery.ClassInternal, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		return delivery.Permanent(delivery.ClassInternal, errors.New("cannot build the request"))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.rt.core.ProductName())
	stdwebhook.SignKeys(req.Header, keys, webhookID(eventID, at.Delivery.ID), now, []byte(body))
	resp, err := s.client.Do(req)
	if err != nil {
		return httptarget.Failure(ctx, err, time.Duration(s.cfg.Timeout), httptarget.TransportReason)
	}
	defer httptarget.Drain(resp)
	return httptarget.Classify(resp, now)
}

// gatedQueue claims nothing while its subscription is disabled: its rows wait.
type gatedQueue struct {
	rt *Runtime
	rowqueue.Queue
}

func (q *gatedQueue) ClaimDeliveries(ctx context.Context, target persistence.InstanceName, n int, lease time.Duration, now time.Time) ([]persistence.Claim, error) {
	h, err := q.rt.health(ctx, string(target))
	if err != nil {
		return nil, err
	}
	if h.DisabledAt != nil {
		return nil, nil
	}
	return q.Queue.ClaimDeliveries(ctx, target, n, lease, now)
}
