package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// This file and the other retention*.go files are the only code that deletes history
// lines: history is append-only everywhere else.

// PruneCursor is where a run of batched pruning goes on: the creation time and id of the
// last message a batch looked at.
type PruneCursor struct {
	CreatedAt time.Time
	ID        int64
}

// PrunePayloads removes the payload records of up to limit settled messages whose payload
// retention ended by now (a message's partner's own setting, else its organization's,
// else global days; 0 keeps for ever), marks the messages pruned and returns the blob keys
// to delete, the number of messages pruned and the cursor the next batch starts after.
// The rows go first and the blobs after the commit, so no row ever names a missing blob;
// a message redelivered meanwhile is not settled and keeps its payloads.
func (s *Store) PrunePayloads(ctx context.Context, now time.Time, global int, after PruneCursor, limit int) (keys []string, pruned int, next PruneCursor, err error) {
	next = after
	err = s.write(ctx, func(t *txn) error {
		keys, pruned, next = nil, 0, after
		cut, err := t.readCutoffs(ctx, now, global, func(pr persistence.PartyRetention) *int { return pr.PayloadDays })
		if err != nil {
			return err
		}
		latest := cut.latest()
		if !latest.After(never) {
			return nil
		}
		expr, args := cut.expr(s)
		q := `SELECT m.id, m.created_at, EXISTS (SELECT 1 FROM payloads p WHERE p.message_id = m.id) FROM messages m
			WHERE m.created_at < ? AND (m.created_at > ? OR (m.created_at = ? AND m.id > ?)) AND m.stage = ? AND m.created_at < ` + expr + `
			ORDER BY m.created_at, m.id LIMIT ?` + s.lockRows
		all := append([]any{s.tv(latest), s.tv(after.CreatedAt), s.tv(after.CreatedAt), after.ID, persistence.StageSettled}, args...)
		rows, err := t.query(ctx, q, append(all, limit)...)
		if err != nil {
			return fmt.Errorf("find expired payloads: %w", err)
		}
		var ids []int64
		for rows.Next() {
			var has bool
			if err := rows.Scan(&next.ID, timeCol{&next.CreatedAt}, &has); err != nil {
				rows.Close()
				return fmt.Errorf("find expired payloads: %w", err)
			}
			if has {
				ids = append(ids, next.ID)
			}
		}
		if err := closeRows(rows); err != nil {
			return fmt.Errorf("find expired payloads: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		cond, arg := s.idList("message_id", ids)
		rows, err = t.query(ctx, `DELETE FROM payloads WHERE `+cond+` RETURNING key`, arg)
		if keys, err = collect(rows, err, func(r rowScanner) (k string, err error) { return k, r.Scan(&k) }); err != nil {
			return fmt.Errorf("delete expired payload records: %w", err)
		}
		marks := make([][]any, len(ids))
		for i, id := range ids {
			marks[i] = []any{id, s.tv(t.now)}
		}
		if err := t.markRetention(ctx, "payloads_pruned_at", marks); err != nil {
			return err
		}
		pruned = len(ids)
		return nil
	})
	if err != nil {
		return nil, 0, after, fmt.Errorf("prune payloads: %w", err)
	}
	return keys, pruned, next, nil
}

// PruneHistory deletes up to limit history lines whose message's history retention ended
// by now and records, per message, the time before which its history is gone. On
// PostgreSQL history past the earliest cutoff of all is left to whole-month partition
// drops (PruneHistoryMonth), which archive it first; the batches there remove only the
// lines of messages whose own retention is shorter.
func (s *Store) PruneHistory(ctx context.Context, now time.Time, global int, limit int) (int, error) {
	var n int
	err := s.write(ctx, func(t *txn) error {
		n = 0
		cut, err := t.readCutoffs(ctx, now, global, func(pr persistence.PartyRetention) *int { return pr.HistoryDays })
		if err != nil {
			return err
		}
		if s.dialect == DialectPostgres {
			cut = cut.without(cut.earliest())
		}
		latest := cut.latest()
		if !latest.After(never) {
			return nil
		}
		expr, args := cut.expr(s)
		q := `DELETE FROM message_history WHERE at < ? AND id IN (SELECT h.id FROM message_history h JOIN messages m ON m.id = h.message_id
			WHERE h.at < ? AND h.at < ` + expr + ` ORDER BY h.at LIMIT ?) RETURNING message_id, at`
		all := append([]any{s.tv(latest), s.tv(latest)}, args...)
		rows, err := t.query(ctx, q, append(all, limit)...)
		if err != nil {
			return fmt.Errorf("delete expired history: %w", err)
		}
		upto := map[int64]time.Time{}
		for rows.Next() {
			var id int64
			var at time.Time
			if err := rows.Scan(&id, timeCol{&at}); err != nil {
				rows.Close()
				return fmt.Errorf("delete expired history: %w", err)
			}
			if at.After(upto[id]) || upto[id].IsZero() {
				upto[id] = at
			}
			n++
		}
		if err := closeRows(rows); err != nil {
			return fmt.Errorf("delete expired history: %w", err)
		}
		marks := make([][]any, 0, len(upto))
		for id, at := range upto {
			marks = append(marks, []any{id, s.tv(at.Add(time.Microsecond))})
		}
		return t.markRetention(ctx, "history_pruned_before", marks)
	})
	if err != nil {
		return 0, fmt.Errorf("prune history: %w", err)
	}
	return n, nil
}

// markRetention records (message id, time) pairs in a column of message_retention: the
// first time payloads were pruned, the latest time history was pruned before.
func (t *txn) markRetention(ctx context.Context, col string, marks [][]any) error {
	keep := ` = COALESCE(message_retention.payloads_pruned_at, excluded.payloads_pruned_at)`
	if col == "history_pruned_before" {
		keep = historyPrunedLater
	}
	for len(marks) > 0 {
		n := min(len(marks), chunkMax)
		var b strings.Builder
		b.WriteString(`INSERT INTO message_retention (message_id, ` + col + `) VALUES `)
		args := make([]any, 0, 2*n)
		for i, m := range marks[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?)")
			args = append(args, m...)
		}
		b.WriteString(` ON CONFLICT (message_id) DO UPDATE SET ` + col + keep)
		if _, err := t.exec(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("mark %s: %w", col, err)
		}
		marks = marks[n:]
	}
	return nil
}

// historyPrunedLater keeps the later of two pruned-before times of a message.
const historyPrunedLater = ` = CASE WHEN message_retention.history_pruned_before IS NULL
	OR message_retention.history_pruned_before < excluded.history_pruned_before
	THEN excluded.history_pruned_before ELSE message_retention.history_pruned_before END`
