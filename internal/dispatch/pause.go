package dispatch

import (
	"context"
	"fmt"

	"wharf/internal/persistence"
)

// ResumePartner ends a partner's pause and wakes the targets of the deliveries that
// waited, which the store queued due now.
func (d *Dispatcher) ResumePartner(ctx context.Context, partner persistence.PartyName, actor string) ([]persistence.Delivery, error) {
	due, err := d.store.ResumePartner(ctx, partner, actor)
	if err != nil {
		return nil, fmt.Errorf("resume partner %s: %w", partner, err)
	}
	d.wakeFor(due)
	return due, nil
}
