package dispatch

import (
	"context"

	"wharf/internal/persistence"
)

// ActOnDeliveries applies an operator's bulk action (redeliver, resubmit, skip) and wakes
// the targets of the deliveries it changed, whose sessions may have released others.
func (d *Dispatcher) ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return d.sessionAction(ctx, string(action), ids, actor, func(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
		return d.store.ActOnDeliveries(ctx, action, ids, actor)
	})
}
