package gateway

import (
	"wharf/internal/metrics"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/product"
)

// newMetrics builds the process's metrics and hooks the store's commits to them; the
// engine, the sweep, the modules' listeners and the health monitor are handed it as they
// are built.
func (g *Gateway) newMetrics() *metrics.Registry {
	protocols := map[persistence.PluginType]string{}
	for _, m := range module.Modules() {
		for _, p := range m.Plugins {
			protocols[p.Type] = m.Name
		}
	}
	reg := metrics.New(metrics.Options{
		Store:     g.Store,
		Protocols: protocols,
		// The queue is built after the metrics; a scrape comes after both.
		AlertDrops: func() uint64 {
			if g.Alerts == nil {
				return 0
			}
			return g.Alerts.Dropped()
		},
		Version: product.Version(),
		Logger:  g.log,
	})
	g.Store.OnChanges(reg.Changes)
	return reg
}
