package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// Directions of a message, by the kind of its sending party.
const (
	directionInbound  = "inbound"  // from a partner
	directionOutbound = "outbound" // from one of our organizations
	unknownLabel      = "unknown"  // a source instance or party deleted since
)

// messageKey is a status change before its labels are resolved. Its fields are
// configuration (instances, parties), so the pending map is bounded by the configuration,
// not by the traffic.
type messageKey struct {
	source persistence.InstanceName
	from   persistence.PartyName
	status persistence.MessageStatus
}

// messageCounter is wharf_messages_total. Status changes arrive on committing goroutines,
// which must not wait for a query, so they are only tallied there; a scrape resolves the
// source instance to its protocol and the sender to a direction (two small reads of
// configuration) and adds the tally to the counters, so every change committed before a
// scrape is in it.
type messageCounter struct {
	store     Store
	protocols map[persistence.PluginType]string
	log       *slog.Logger
	vec       *prometheus.CounterVec

	mu      sync.Mutex
	pending map[messageKey]float64
	// flush serializes scrapes' resolution, so two scrapes cannot add one tally twice.
	flush sync.Mutex
}

func newMessageCounter(store Store, protocols map[persistence.PluginType]string, log *slog.Logger) *messageCounter {
	return &messageCounter{store: store, protocols: protocols, log: log, pending: map[messageKey]float64{},
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_messages_total",
			Help: "Messages that entered each status, committed by this process, by the protocol of their source and their direction (inbound from a partner, outbound from an organization). A message counts once for every status it enters.",
		}, []string{"protocol", "direction", "status"})}
}

// changed tallies the status changes of one commit.
func (c *messageCounter) changed(ms []db.StatusChange) {
	// Without a store nothing could resolve the tally.
	if len(ms) == 0 || c.store == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		c.pending[messageKey{source: m.Source, from: m.From, status: m.Status}]++
	}
}

func (c *messageCounter) Describe(ch chan<- *prometheus.Desc) { c.vec.Describe(ch) }

func (c *messageCounter) Collect(ch chan<- prometheus.Metric) {
	c.resolve()
	c.vec.Collect(ch)
}

// resolveTimeout bounds the configuration reads of one scrape.
const resolveTimeout = 5 * time.Second

// resolve moves the tally into the counters. When the configuration cannot be read the
// tally waits for the next scrape.
func (c *messageCounter) resolve() {
	c.flush.Lock()
	defer c.flush.Unlock()
	c.mu.Lock()
	empty := len(c.pending) == 0
	c.mu.Unlock()
	if empty || c.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	protocols, orgs, err := c.labels(ctx)
	if err != nil {
		// The health monitor reports the outage; the tally waits for the next scrape.
		c.log.Debug("read configuration for the message metrics", "err", err)
		return
	}
	c.mu.Lock()
	pending := c.pending
	c.pending = map[messageKey]float64{}
	c.mu.Unlock()
	for k, n := range pending {
		protocol, ok := protocols[k.source]
		if !ok {
			protocol = unknownLabel
		}
		direction := directionInbound
		if orgs[k.from] {
			direction = directionOutbound
		}
		c.vec.WithLabelValues(protocol, direction, string(k.status)).Add(n)
	}
}

// labels reads the protocol of every plugin instance and the names of our organizations.
func (c *messageCounter) labels(ctx context.Context) (map[persistence.InstanceName]string, map[persistence.PartyName]bool, error) {
	instances, err := c.store.ListPluginConfigs(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	protocols := make(map[persistence.InstanceName]string, len(instances))
	for _, in := range instances {
		p, ok := c.protocols[in.Type]
		if !ok {
			p = unknownLabel
		}
		protocols[in.Name] = p
	}
	orgs := map[persistence.PartyName]bool{}
	const page = 500
	for offset := 0; ; offset += page {
		list, total, err := c.store.ListParties(ctx, persistence.PartyOrganization, persistence.ListOptions{Limit: page, Offset: offset})
		if err != nil {
			return nil, nil, err
		}
		for _, p := range list {
			orgs[p.Name] = true
		}
		if len(list) == 0 || offset+len(list) >= total {
			return protocols, orgs, nil
		}
	}
}

// Changes counts what a committed transaction changed (the store's OnChanges hook): its
// delivery transitions and the statuses its messages entered. It never blocks on I/O.
func (r *Registry) Changes(c db.Changes) {
	for _, d := range c.Deliveries {
		r.transitions.WithLabelValues(string(d.Target), string(d.From), string(d.To)).Inc()
	}
	r.messages.changed(c.Messages)
}
