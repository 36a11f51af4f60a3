package db

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"wharf/internal/persistence"
)

// partitionLockKey serializes the creation of history partitions between processes.
const partitionLockKey int32 = 0x57687061 // "Whpa"

// HistoryMonthsAhead is how many monthly history partitions exist from the current month
// on: created at start and kept so by the pruning job.
const HistoryMonthsAhead = 3

// partitionName names the history partition of the month starting at start.
func partitionName(start time.Time) string {
	return fmt.Sprintf("message_history_y%04dm%02d", start.Year(), int(start.Month()))
}

func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// EnsureHistoryPartitions creates the monthly history partitions from the month of first
// on, months of them, where they are missing (PostgreSQL; nothing on SQLite). Lines the
// default partition took for such a month move into it in the same transaction.
func (s *Store) EnsureHistoryPartitions(ctx context.Context, first time.Time, months int) error {
	if s.dialect != DialectPostgres {
		return nil
	}
	start := monthStart(first)
	for range months {
		end := start.AddDate(0, 1, 0)
		if err := s.ensurePartition(ctx, start, end); err != nil {
			return fmt.Errorf("create history partition %s: %w", partitionName(start), err)
		}
		start = end
	}
	return nil
}

func (s *Store) ensurePartition(ctx context.Context, start, end time.Time) error {
	name := partitionName(start)
	return s.writeOne(ctx, func(t *txn) error {
		if _, err := t.exec(ctx, `SELECT pg_advisory_xact_lock(?)`, partitionLockKey); err != nil {
			return err
		}
		var exists bool
		if err := t.queryRow(ctx, `SELECT to_regclass(?) IS NOT NULL`, name).Scan(&exists); err != nil || exists {
			return err
		}
		for _, q := range []string{
			`CREATE TABLE ` + name + ` (LIKE message_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
			`WITH moved AS (DELETE FROM message_history_default WHERE at >= ? AND at < ? RETURNING *) INSERT INTO ` + name + ` SELECT * FROM moved`,
			`ALTER TABLE message_history ATTACH PARTITION ` + name + ` FOR VALUES FROM ('` + start.Format(time.RFC3339) + `') TO ('` + end.Format(time.RFC3339) + `')`,
		} {
			args := []any{}
			if q[0] == 'W' {
				args = []any{start, end}
			}
			if _, err := t.exec(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// HistoryPartitions lists the monthly history partitions, oldest first, with their row
// counts (PostgreSQL; none on SQLite).
func (s *Store) HistoryPartitions(ctx context.Context) ([]persistence.HistoryPartition, error) {
	if s.dialect != DialectPostgres {
		return nil, nil
	}
	var out []persistence.HistoryPartition
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'message_history'::regclass`)
		names, err := collect(rows, err, func(r rowScanner) (n string, err error) { return n, r.Scan(&n) })
		if err != nil {
			return err
		}
		for _, n := range names {
			var y, m int
			if _, err := fmt.Sscanf(n, "message_history_y%04dm%02d", &y, &m); err != nil {
				continue // the default partition
			}
			p := persistence.HistoryPartition{Name: n, Start: time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC)}
			p.End = p.Start.AddDate(0, 1, 0)
			if err := t.queryRow(ctx, `SELECT COUNT(*) FROM `+n).Scan(&p.Rows); err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list history partitions: %w", err)
	}
	slices.SortFunc(out, func(a, b persistence.HistoryPartition) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// ExpiredHistoryMonths lists the history partitions whose month ended before every
// message's history retention did, so they can be archived and dropped whole.
func (s *Store) ExpiredHistoryMonths(ctx context.Context, now time.Time, global int) ([]persistence.HistoryPartition, error) {
	if s.dialect != DialectPostgres {
		return nil, nil
	}
	var earliest time.Time
	err := s.read(ctx, func(t *txn) error {
		cut, err := t.readCutoffs(ctx, now, global, func(pr persistence.PartyRetention) *int { return pr.HistoryDays })
		earliest = cut.earliest()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find expired history months: %w", err)
	}
	all, err := s.HistoryPartitions(ctx)
	if err != nil {
		return nil, err
	}
	var out []persistence.HistoryPartition
	for _, p := range all {
		if !p.End.After(earliest) {
			out = append(out, p)
		}
	}
	return out, nil
}

// ExportHistoryMonth writes every line of a history partition to w as JSON lines, in id
// order, each line an object of the table's columns, and returns how many it wrote.
func (s *Store) ExportHistoryMonth(ctx context.Context, p persistence.HistoryPartition, w io.Writer) (int64, error) {
	var n int64
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT * FROM `+partitionName(p.Start)+` ORDER BY id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		enc := json.NewEncoder(w)
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			line := make(map[string]any, len(cols))
			for i, c := range cols {
				line[c] = vals[i]
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
			n++
		}
		return closeRows(rows)
	})
	if err != nil {
		return 0, fmt.Errorf("export history %s: %w", partitionName(p.Start), err)
	}
	return n, nil
}

// DropHistoryMonth records the archive of a history partition exported with rows lines
// under key, marks the history of its messages pruned before the month's end and drops
// the partition, in one transaction; a partition that no longer holds rows lines is
// ErrConflict and stays.
func (s *Store) DropHistoryMonth(ctx context.Context, p persistence.HistoryPartition, key string, rows int64) error {
	name := partitionName(p.Start)
	err := s.writeOne(ctx, func(t *txn) error {
		if _, err := t.exec(ctx, `LOCK TABLE `+name+` IN SHARE MODE`); err != nil {
			return err
		}
		var now int64
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM `+name).Scan(&now); err != nil {
			return err
		}
		if now != rows {
			return fmt.Errorf("it holds %d lines, %d were exported: %w", now, rows, persistence.ErrConflict)
		}
		if _, err := t.exec(ctx, `INSERT INTO history_archives (range_start, range_end, rows, key, created_at) VALUES (?, ?, ?, ?, ?)`,
			p.Start, p.End, rows, key, t.now); err != nil {
			return err
		}
		if _, err := t.exec(ctx, `INSERT INTO message_retention (message_id, history_pruned_before) SELECT DISTINCT message_id, CAST(? AS timestamptz) FROM `+name+
			` ON CONFLICT (message_id) DO UPDATE SET history_pruned_before`+historyPrunedLater, p.End); err != nil {
			return err
		}
		_, err := t.exec(ctx, `DROP TABLE `+name)
		return err
	})
	if err != nil {
		return fmt.Errorf("drop history %s: %w", name, err)
	}
	return nil
}
