// Package metrics owns the process's Prometheus registry and every collector in it. The
// rest of the process reports through small interfaces declared where they are used
// (delivery.Metrics, module.InboundMetrics, the store's OnChanges hook, …), so only this
// package imports the Prometheus client. Labels are bounded by configuration or code:
// protocol, plugin instance, state, status, reason codes, route patterns; never a
// party, a message, an address or a URL.
package metrics

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// Store is what the metrics read from the database at scrape time.
type Store interface {
	CountOpenDeliveries(ctx context.Context) ([]db.TargetStateCount, error)
	CertificateExpiryByUse(ctx context.Context) (map[string]time.Time, error)
	ListPluginConfigs(ctx context.Context, typ persistence.PluginType) ([]persistence.PluginConfig, error)
	ListParties(ctx context.Context, kind persistence.PartyKind, opt persistence.ListOptions) ([]persistence.Party, int, error)
}

// Options configure New.
type Options struct {
	// Store answers the families read from the database; nil leaves them out.
	Store Store
	// Protocols names the protocol (the module) of each plugin type, for the messages'
	// protocol label.
	Protocols map[persistence.PluginType]string
	// AlertDrops counts the alerts the process's queue dropped; nil leaves the family out.
	AlertDrops func() uint64
	// Version is the build's version, in wharf_build_info.
	Version string
	// Logger receives failures of the scrape-time queries; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Registry is the process's metrics: its own Prometheus registry (never the global
// default, so tests and several gateways in one process do not share counters) and the
// collectors that feed it.
type Registry struct {
	reg *prometheus.Registry
	log *slog.Logger
	now func() time.Time

	messages    *messageCounter
	transitions *prometheus.CounterVec
	delivery    deliveryMetrics
	sweep       sweepMetrics
	inbound     inboundMetrics
	http        *prometheus.HistogramVec
	health      healthMetrics
	retention   *prometheus.CounterVec

	callbacks callbackOutcomes
}

// New builds the registry with every family registered.
func New(o Options) *Registry {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	r := &Registry{reg: prometheus.NewRegistry(), log: log.With("component", "metrics"), now: now}
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wharf_build_info", Help: "Always 1; the version label names the build.",
			ConstLabels: prometheus.Labels{"version": o.Version}}, func() float64 { return 1 }),
	)
	r.messages = newMessageCounter(o.Store, o.Protocols, r.log)
	r.reg.MustRegister(r.messages)
	r.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wharf_delivery_transitions_total",
		Help: "Delivery state transitions committed by this process, by target instance and the states left and entered.",
	}, []string{"target", "from", "to"})
	r.reg.MustRegister(r.transitions)
	r.delivery = newDeliveryMetrics(r.reg)
	r.sweep = newSweepMetrics(r.reg)
	r.inbound = newInboundMetrics(r.reg)
	r.http = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "wharf_http_request_duration_seconds",
		Help:    "Time to answer requests on the API and web UI listener, by the route pattern that served them and the status code.",
		Buckets: durationBuckets,
	}, []string{"route", "code"})
	r.reg.MustRegister(r.http)
	r.health = newHealthMetrics(r.reg)
	r.retention = newRetentionMetrics(r.reg)
	if o.Store != nil {
		r.reg.MustRegister(newStoreCollector(o.Store, r.log, now))
	}
	if o.AlertDrops != nil {
		drops := o.AlertDrops
		r.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "wharf_alerts_dropped_total",
			Help: "Alerts this process raised that its queue dropped (full or stopping) before they reached the bus.",
		}, func() float64 { return float64(drops()) }))
	}
	return r
}

// durationBuckets spans a quick local write to a slow partner's two minutes.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Handler serves the registry in the Prometheus text format. A non-empty token is
// required as "Authorization: Bearer <token>"; without it the answer is 401.
func (r *Registry) Handler(token string) http.Handler {
	h := promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(r.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      r.reg,
	})
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "the metrics need the bearer token of WHARF_METRICS_TOKEN", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, req)
	})
}
