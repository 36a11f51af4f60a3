package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// healthMetrics are the families of the health monitor's checks.
type healthMetrics struct {
	dbUp, busUp     prometheus.Gauge
	dbPing, busPing prometheus.Gauge
}

func newHealthMetrics(reg prometheus.Registerer) healthMetrics {
	m := healthMetrics{
		dbUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wharf_database_up",
			Help: "1 when the database answered the last health check, else 0."}),
		busUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wharf_bus_up",
			Help: "1 when the bus answered the last health check, else 0."}),
		dbPing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wharf_database_ping_seconds",
			Help: "How long the database took to answer (or fail) the last health check."}),
		busPing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wharf_bus_ping_seconds",
			Help: "How long the bus took to answer (or fail) the last health check."}),
	}
	reg.MustRegister(m.dbUp, m.busUp, m.dbPing, m.busPing)
	return m
}

// Checked records one health check: whether the database and the bus answered, and how
// long each took.
func (r *Registry) Checked(dbUp, busUp bool, dbPing, busPing time.Duration) {
	r.health.dbUp.Set(boolGauge(dbUp))
	r.health.busUp.Set(boolGauge(busUp))
	r.health.dbPing.Set(dbPing.Seconds())
	r.health.busPing.Set(busPing.Seconds())
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
