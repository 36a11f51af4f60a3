package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// deliveryMetrics are the delivery engine's families.
type deliveryMetrics struct {
	wakeups  *prometheus.CounterVec
	attempts *prometheus.HistogramVec
	lost     *prometheus.CounterVec
}

func newDeliveryMetrics(reg prometheus.Registerer) deliveryMetrics {
	m := deliveryMetrics{
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_worker_wakeups_total",
			Help: "Wake-ups the delivery workers of this process heard, by target instance.",
		}, []string{"target"}),
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wharf_delivery_attempt_duration_seconds",
			Help:    "Time a target took for one delivery attempt, by target instance and what became of it (delivered, awaiting_ack, retry, failed, claim_lost, interrupted).",
			Buckets: durationBuckets,
		}, []string{"target", "outcome"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_delivery_claims_lost_total",
			Help: "Claims a worker of this process found taken from it (its lease had run out), by target instance; the attempt's outcome is dropped, never recorded twice.",
		}, []string{"target"}),
	}
	reg.MustRegister(m.wakeups, m.attempts, m.lost)
	return m
}

var (
	_ delivery.Metrics      = (*Registry)(nil)
	_ delivery.SweepMetrics = (*Registry)(nil)
)

// Woken implements delivery.Metrics.
func (r *Registry) Woken(target persistence.InstanceName) {
	r.delivery.wakeups.WithLabelValues(string(target)).Inc()
}

// AttemptDone implements delivery.Metrics.
func (r *Registry) AttemptDone(target persistence.InstanceName, outcome string, d time.Duration) {
	r.delivery.attempts.WithLabelValues(string(target), outcome).Observe(d.Seconds())
}

// ClaimLost implements delivery.Metrics.
func (r *Registry) ClaimLost(target persistence.InstanceName) {
	r.delivery.lost.WithLabelValues(string(target)).Inc()
}

// sweepMetrics are the sweep's families.
type sweepMetrics struct {
	expiries *prometheus.CounterVec
	last     prometheus.Gauge
	duration prometheus.Gauge
	passes   prometheus.Counter
	rows     *prometheus.GaugeVec
}

func newSweepMetrics(reg prometheus.Registerer) sweepMetrics {
	m := sweepMetrics{
		expiries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_delivery_lease_expiries_total",
			Help: "Deliveries whose claim's lease ran out (a worker died or hung) and that this process's sweep made due again, by target instance.",
		}, []string{"target"}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wharf_sweep_last_run_timestamp_seconds",
			Help: "When this process's sweep last ran a pass (Unix time).",
		}),
		duration: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wharf_sweep_duration_seconds",
			Help: "How long the last sweep pass took.",
		}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wharf_sweep_passes_total",
			Help: "Sweep passes this process ran.",
		}),
		rows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wharf_sweep_rows",
			Help: "Rows the last sweep pass changed, by kind (expired_leases, woken, stalled, expired_acks).",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.expiries, m.last, m.duration, m.passes, m.rows)
	return m
}

// LeaseExpired implements delivery.SweepMetrics.
func (r *Registry) LeaseExpired(target persistence.InstanceName) {
	r.sweep.expiries.WithLabelValues(string(target)).Inc()
}

// Swept implements delivery.SweepMetrics.
func (r *Registry) Swept(rep delivery.SweepReport) {
	r.sweep.last.Set(float64(rep.At.UnixNano()) / 1e9)
	r.sweep.duration.Set(rep.Duration.Seconds())
	r.sweep.passes.Inc()
	for kind, n := range map[string]int{"expired_leases": rep.ExpiredLeases, "woken": rep.Woken,
		"stalled": rep.Stalled, "expired_acks": rep.ExpiredAcks} {
		r.sweep.rows.WithLabelValues(kind).Set(float64(n))
	}
}
