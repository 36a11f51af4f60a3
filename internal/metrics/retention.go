package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"wharf/internal/retention"
)

var _ retention.Metrics = (*Registry)(nil)

func newRetentionMetrics(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wharf_retention_pruned_total",
		Help: "What the pruning job of this process removed: messages whose payloads went (payloads), history lines deleted (history_lines) and months of history archived and dropped (history_months), idle ordered sessions (idle_sessions) and webhook-ids of status callbacks past their repeat window (callback_ids).",
	}, []string{"kind"})
	reg.MustRegister(c)
	return c
}

// Pruned implements retention.Metrics.
func (r *Registry) Pruned(kind string, n int) {
	r.retention.WithLabelValues(kind).Add(float64(n))
}
