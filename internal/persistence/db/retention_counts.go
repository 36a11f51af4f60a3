package db

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// CountsLiveDays is how many days before today the daily counts are taken again at every
// rollup (a message's status may still change then); older days' counts are final, and
// CountMessagesPerDay reads them from daily_counts rather than from the messages.
const CountsLiveDays = 7

const dayLayout = "2006-01-02"

func dayStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// dayExpr is the UTC day of a message's creation as text, alike on both databases.
func (s *Store) dayExpr() string {
	if s.dialect == DialectPostgres {
		return `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`
	}
	return `substr(created_at, 1, 10)`
}

// RollupDailyCounts counts the messages of every UTC day before today by parties and
// status into daily_counts, which keeps them for ever: the days since the last rollup,
// and again the CountsLiveDays before today. The pruning job runs it before it prunes.
// It returns the first day it counted.
func (s *Store) RollupDailyCounts(ctx context.Context, now time.Time) (time.Time, error) {
	today := dayStart(now)
	var from time.Time
	err := s.write(ctx, func(t *txn) error {
		var last *string
		if err := t.queryRow(ctx, `SELECT MAX(day) FROM daily_counts`).Scan(&last); err != nil {
			return err
		}
		from = today.AddDate(0, 0, -CountsLiveDays)
		if last == nil {
			var first *time.Time
			if err := t.queryRow(ctx, `SELECT MIN(created_at) FROM messages`).Scan(nullTimeCol{&first}); err != nil {
				return err
			}
			if first == nil {
				return nil
			}
			from = dayStart(*first)
		} else if d, err := time.Parse(dayLayout, *last); err != nil {
			return fmt.Errorf("day %q: %w", *last, err)
		} else if d.Before(from) {
			from = d
		}
		if !from.Before(today) {
			return nil
		}
		if _, err := t.exec(ctx, `DELETE FROM daily_counts WHERE day >= ? AND day < ?`, from.Format(dayLayout), today.Format(dayLayout)); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO daily_counts (day, from_party, to_party, status, count, bytes)
			SELECT `+s.dayExpr()+` AS day, from_party, to_party, status, COUNT(*), COALESCE(SUM(size), 0) FROM messages
			WHERE created_at >= ? AND created_at < ? GROUP BY day, from_party, to_party, status`, s.tv(from), s.tv(today))
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("roll up daily counts: %w", err)
	}
	return from, nil
}

// CountMessagesPerDay counts messages per UTC day of creation and status from first on:
// the days before the last CountsLiveDays from daily_counts, which outlive pruning, and
// the later ones from the messages themselves.
func (s *Store) CountMessagesPerDay(ctx context.Context, first time.Time) ([]persistence.DayCount, error) {
	first = dayStart(first)
	live := dayStart(s.now()).AddDate(0, 0, -CountsLiveDays)
	var out []persistence.DayCount
	scan := func(r rowScanner) (persistence.DayCount, error) {
		var c persistence.DayCount
		var day string
		if err := r.Scan(&day, &c.Status, &c.Count, &c.Bytes); err != nil {
			return c, err
		}
		d, err := time.Parse(dayLayout, day)
		c.Day = d
		return c, err
	}
	err := s.read(ctx, func(t *txn) error {
		if first.Before(live) {
			rows, err := t.query(ctx, `SELECT day, status, SUM(count), SUM(bytes) FROM daily_counts WHERE day >= ? AND day < ?
				GROUP BY day, status ORDER BY day, status`, first.Format(dayLayout), live.Format(dayLayout))
			old, err := collect(rows, err, scan)
			if err != nil {
				return err
			}
			out = append(out, old...)
		}
		rows, err := t.query(ctx, `SELECT `+s.dayExpr()+` AS day, status, COUNT(*), COALESCE(SUM(size), 0) FROM messages
			WHERE created_at >= ? GROUP BY day, status ORDER BY day, status`, s.tv(later(first, live)))
		recent, err := collect(rows, err, scan)
		out = append(out, recent...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count messages per day: %w", err)
	}
	return out, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
