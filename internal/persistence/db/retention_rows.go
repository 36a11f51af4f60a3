package db

import (
	"context"
	"fmt"
	"time"
)

// Rows that only serve a while and are pruned on fixed windows, whatever the retention
// settings say.
const (
	// SessionIdle is how long an ordered session with nothing left to deliver and nothing
	// blocking it keeps its row; the next dispatch into it creates the row again.
	SessionIdle = 30 * 24 * time.Hour
	// CallbackIDsKept is how long the webhook-id of an applied status callback is kept to
	// refuse a repeat. A repeat must also pass the signature's timestamp check, which
	// refuses anything older than a few minutes, so a day leaves a wide margin for
	// callbacks that waited in the spool during an outage.
	CallbackIDsKept = 24 * time.Hour
)

// PruneIdleSessions deletes up to limit ordered sessions idle since before now minus
// SessionIdle. A dispatch into a session updates its row first, so a session in use is
// never idle and a concurrent dispatch makes the delete skip the row.
func (s *Store) PruneIdleSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	const idle = `s.updated_at < ? AND s.blocked_by IS NULL AND NOT EXISTS (SELECT 1 FROM deliveries d
		WHERE d.session_key = s.key AND d.state NOT IN ('delivered', 'skipped'))`
	cut := s.tv(now.Add(-SessionIdle))
	return s.pruneRows(ctx, "idle sessions", `DELETE FROM sessions WHERE key IN (SELECT s.key FROM sessions s WHERE `+idle+
		` ORDER BY s.updated_at LIMIT ?) AND updated_at < ? AND blocked_by IS NULL`, cut, limit, cut)
}

// PruneCallbackIDs deletes up to limit webhook-ids of status callbacks applied before now
// minus CallbackIDsKept.
func (s *Store) PruneCallbackIDs(ctx context.Context, now time.Time, limit int) (int, error) {
	cut := s.tv(now.Add(-CallbackIDsKept))
	return s.pruneRows(ctx, "status callback ids", `DELETE FROM status_callbacks WHERE (target, webhook_id) IN
		(SELECT target, webhook_id FROM status_callbacks WHERE applied_at < ? ORDER BY applied_at LIMIT ?)`, cut, limit)
}

// pruneRows runs one bounded delete and returns the rows it removed.
func (s *Store) pruneRows(ctx context.Context, what, q string, args ...any) (int, error) {
	var n int64
	err := s.write(ctx, func(t *txn) error {
		res, err := t.exec(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune %s: %w", what, err)
	}
	return int(n), nil
}
