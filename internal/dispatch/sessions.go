package dispatch

import (
	"context"
	"fmt"

	"wharf/internal/persistence"
)

// ResubmitDeliveries attempts failed or stalled deliveries again and wakes their targets.
func (d *Dispatcher) ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return d.sessionAction(ctx, "resubmit", ids, actor, d.store.ResubmitDeliveries)
}

// SkipDeliveries skips failed or parked deliveries and wakes their targets, whose
// sessions may have released parked deliveries.
func (d *Dispatcher) SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return d.sessionAction(ctx, "skip", ids, actor, d.store.SkipDeliveries)
}

func (d *Dispatcher) sessionAction(ctx context.Context, name string, ids []int64, actor string,
	act func(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error)) ([]persistence.DeliveryActionResult, error) {
	res, err := act(ctx, ids, actor)
	if err != nil {
		return nil, fmt.Errorf("%s deliveries: %w", name, err)
	}
	var due []persistence.Delivery
	for _, r := range res {
		if r.Err == nil {
			due = append(due, r.Delivery)
		}
	}
	d.wakeFor(due)
	return res, nil
}
