package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"wharf/internal/persistence"
)

// callbackOutcomes counts the status callbacks applied, registered on first use so the
// family appears only in processes that take callbacks.
type callbackOutcomes struct {
	once sync.Once
	vec  *prometheus.CounterVec
}

// CallbackApplied implements callbacks.Outcomes: one more callback of target came to
// outcome (applied, duplicate, unmatched).
func (r *Registry) CallbackApplied(target persistence.InstanceName, outcome persistence.CallbackOutcome) {
	r.callbacks.once.Do(func() {
		r.callbacks.vec = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_status_callbacks_total",
			Help: "Verified status callbacks the spool handed to the store, by target instance and outcome (applied, duplicate, unmatched).",
		}, []string{"target", "outcome"})
		r.reg.MustRegister(r.callbacks.vec)
	})
	r.callbacks.vec.WithLabelValues(string(target), string(outcome)).Inc()
}
