package receiver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/settings"
)

// refusedBodySettings reads the settings that bound the raw bodies kept of refused
// messages (their defaults when unset).
func (rc *Receiver) refusedBodySettings(ctx context.Context) (settings.Values, error) {
	m := map[string]string{}
	for _, key := range []string{settings.RefusedBodyMaxMiB, settings.RefusedBodyBudgetMiB} {
		v, err := rc.deps.Store.GetSetting(ctx, key)
		switch {
		case err == nil:
			m[key] = v
		case !errors.Is(err, persistence.ErrNotFound):
			return settings.Values{}, fmt.Errorf("read setting %s: %w", key, err)
		}
	}
	return settings.Parse(m)
}

// refusedBodyKept decides how much of a refused message's raw body of size bytes is
// kept: at most refused_body_max_mib, and nothing once the partner's refused bodies
// kept over the last 24 hours have reached refused_body_budget_mib, so unauthenticated
// garbage sent under a partner's (public) AS2 ids cannot fill the disk. withheld says
// why no body is kept when the budget stopped it.
//
// The sum is read before the refusal is recorded and not under a lock: refusals of one
// partner recorded at the same moment all see the same sum, so the budget can be
// overshot by the bodies of those concurrent refusals, and by the last body that
// started under the budget (at most refused_body_max_mib each).
func (rc *Receiver) refusedBodyKept(ctx context.Context, partner string, size int64) (kept int64, withheld string, err error) {
	values, err := rc.refusedBodySettings(ctx)
	if err != nil {
		return 0, "", err
	}
	kept = min(size, values.RefusedBodyMaxBytes())
	if kept <= 0 {
		return kept, "", nil
	}
	budget := values.RefusedBodyBudgetBytes()
	used, err := refusedBodiesKept(ctx, rc.deps.DB, partner)
	if err != nil {
		return 0, "", err
	}
	if used < budget {
		return kept, "", nil
	}
	return 0, "raw body not kept: partner's refused-body budget of " + strconv.Itoa(values.RefusedBodyBudgetMiB) +
		" MiB per 24 h used up", nil
}

// refusedBodiesKept sums the raw bodies kept of the partner's refusals first seen within
// the budget's window (one indexed range of as2_refusals).
func refusedBodiesKept(ctx context.Context, db module.SQL, partner string) (int64, error) {
	var used int64
	err := db.Read(ctx, func(tx module.Tx) error {
		since := tx.Time(tx.Now().Add(-settings.RefusedBodyBudgetWindow))
		return tx.QueryRow(ctx, `SELECT COALESCE(SUM(body_kept), 0) FROM as2_refusals WHERE partner = ? AND first_at >= ?`,
			partner, since).Scan(&used)
	})
	if err != nil {
		return 0, fmt.Errorf("sum the refused bodies kept of partner %s: %w", partner, err)
	}
	return used, nil
}
