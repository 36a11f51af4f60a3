package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"wharf/internal/persistence/db"
)

// storeTTL is how long one reading of the database answers further scrapes: several
// Prometheus servers scraping together cost one query.
const storeTTL = 5 * time.Second

// storeCollector reads the gauges that only the database knows, at scrape time: the
// deliveries not yet final, and how soon certificates expire. Both are database-wide, so
// every process of a distributed installation reports the same values.
type storeCollector struct {
	store Store
	log   *slog.Logger
	now   func() time.Time

	deliveries *prometheus.Desc
	expiry     *prometheus.Desc

	mu     sync.Mutex
	readAt time.Time
	counts []db.TargetStateCount
	ends   map[string]time.Time
	err    error
}

func newStoreCollector(store Store, log *slog.Logger, now func() time.Time) *storeCollector {
	return &storeCollector{store: store, log: log, now: now,
		deliveries: prometheus.NewDesc("wharf_deliveries",
			"Deliveries not yet final (queued, delivering, retrying, awaiting_ack, stalled, parked), by target instance and state, read from the database.",
			[]string{"target", "state"}, nil),
		expiry: prometheus.NewDesc("wharf_certificate_expiry_days_min",
			"Days until the soonest-expiring stored certificate of each use (the kind of record that names it, or unused) ends; negative once it has.",
			[]string{"use"}, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.deliveries
	ch <- c.expiry
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	counts, ends, err := c.read()
	if err != nil {
		// The families are left out while the database is out of reach; wharf_database_up
		// tells why.
		return
	}
	for _, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.deliveries, prometheus.GaugeValue, float64(n.Count), string(n.Target), string(n.State))
	}
	now := c.now()
	for use, end := range ends {
		ch <- prometheus.MustNewConstMetric(c.expiry, prometheus.GaugeValue, end.Sub(now).Hours()/24, use)
	}
}

// read answers from the last reading while it is fresh, else queries the database.
func (c *storeCollector) read() ([]db.TargetStateCount, map[string]time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && c.now().Sub(c.readAt) < storeTTL {
		return c.counts, c.ends, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	c.counts, c.err = c.store.CountOpenDeliveries(ctx)
	if c.err == nil {
		c.ends, c.err = c.store.CertificateExpiryByUse(ctx)
	}
	if c.err != nil {
		// The health monitor reports the outage; this is only its echo.
		c.log.Debug("read the database for the metrics", "err", c.err)
	}
	c.readAt = c.now()
	return c.counts, c.ends, c.err
}
