package db

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// PrunedFor tells, for each of the messages retention touched, what it pruned: when the
// payloads went, before which time the history went and the archives that hold it.
// Messages retention never touched are left out.
func (s *Store) PrunedFor(ctx context.Context, messageIDs []int64) (map[int64]persistence.Pruned, error) {
	out := map[int64]persistence.Pruned{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	err := s.read(ctx, func(t *txn) error {
		cond, arg := s.idList("r.message_id", messageIDs)
		rows, err := t.query(ctx, `SELECT r.message_id, r.payloads_pruned_at, r.history_pruned_before FROM message_retention r WHERE `+cond, arg)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p persistence.Pruned
			if err := rows.Scan(&p.MessageID, nullTimeCol{&p.PayloadsPrunedAt}, nullTimeCol{&p.HistoryPrunedBefore}); err != nil {
				rows.Close()
				return err
			}
			out[p.MessageID] = p
		}
		if err := closeRows(rows); err != nil {
			return err
		}
		rows, err = t.query(ctx, `SELECT r.message_id, a.key FROM message_retention r JOIN messages m ON m.id = r.message_id
			JOIN history_archives a ON a.range_start < r.history_pruned_before AND a.range_end > m.created_at
			WHERE `+cond+` ORDER BY a.range_start`, arg)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var key string
			if err := rows.Scan(&id, &key); err != nil {
				rows.Close()
				return err
			}
			p := out[id]
			p.ArchiveKeys = append(p.ArchiveKeys, key)
			out[id] = p
		}
		return closeRows(rows)
	})
	if err != nil {
		return nil, fmt.Errorf("read what retention pruned: %w", err)
	}
	return out, nil
}

// historySkew is how much earlier than its message's creation time a history line may be
// stamped: the creation time comes from the source's clock, the line's from the store's.
const historySkew = 24 * time.Hour

// MaxHistoryRange is the longest time range one history read may span.
const MaxHistoryRange = 31 * 24 * time.Hour

// ListHistoryRange lists the history lines written from from until to (excluded) with an
// id after after, in id order, at most limit; a range longer than MaxHistoryRange is
// refused, so every read stays within a few partitions.
func (s *Store) ListHistoryRange(ctx context.Context, from, to time.Time, after int64, limit int) ([]persistence.HistoryEntry, error) {
	switch {
	case !to.After(from):
		return nil, fmt.Errorf("list history: %w", fieldMsg("to", "must be after from"))
	case to.Sub(from) > MaxHistoryRange:
		return nil, fmt.Errorf("list history: %w", fieldMsg("to", "must be at most 31 days after from"))
	}
	var out []persistence.HistoryEntry
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+historyCols+` FROM message_history WHERE at >= ? AND at < ? AND id > ? ORDER BY id LIMIT ?`,
			s.tv(from), s.tv(to), after, limit)
		out, err = collect(rows, err, scanHistory)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list history: %w", err)
	}
	return out, nil
}
