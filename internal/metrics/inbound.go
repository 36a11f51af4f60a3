package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// inboundMetrics are the families of requests from outside (the AS2 receiver's).
type inboundMetrics struct {
	total    *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
	refused  *prometheus.CounterVec
}

func newInboundMetrics(reg prometheus.Registerer) inboundMetrics {
	m := inboundMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_inbound_requests_total",
			Help: "Requests from outside that got a slot (past the per-address and capacity limits), by protocol and receiving instance.",
		}, []string{"protocol", "instance"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wharf_inbound_requests_in_flight",
			Help: "Requests from outside in progress, by protocol and receiving instance.",
		}, []string{"protocol", "instance"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_inbound_requests_refused_total",
			Help: "Requests from outside refused, by protocol, receiving instance and reason code (a limit, a bad request, or the disposition of a refused message).",
		}, []string{"protocol", "instance", "reason"}),
	}
	reg.MustRegister(m.total, m.inFlight, m.refused)
	return m
}

var _ module.InboundMetrics = (*Registry)(nil)

// Began implements module.InboundMetrics.
func (r *Registry) Began(protocol string, instance persistence.InstanceName) func() {
	r.inbound.total.WithLabelValues(protocol, string(instance)).Inc()
	g := r.inbound.inFlight.WithLabelValues(protocol, string(instance))
	g.Inc()
	return g.Dec
}

// Refused implements module.InboundMetrics.
func (r *Registry) Refused(protocol string, instance persistence.InstanceName, reason string) {
	r.inbound.refused.WithLabelValues(protocol, string(instance), reason).Inc()
}
