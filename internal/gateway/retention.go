package gateway

import (
	"context"

	"wharf/internal/persistence"
	"wharf/internal/retention"
)

// newRetention builds the pruning job; it runs in the sweeper role, while this process
// holds the sweep lock, and reads the retention settings before every run.
func (g *Gateway) newRetention() *retention.Job {
	j := retention.New(g.Store, g.Blobs, g.log, func(ctx context.Context) persistence.Retention {
		return g.settings(ctx).Retention
	})
	j.Active = g.sweepLock.Active
	j.Metrics = g.Metrics
	return j
}
