package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// CountMessagesByStatus counts messages by status with one grouped scan: each window is
// a conditional sum beside the total, so the dashboard's three columns cost one query.
// On both databases the (status, created_at) index covers it.
func (s *Store) CountMessagesByStatus(ctx context.Context, since ...time.Time) ([]persistence.StatusCount, error) {
	var b strings.Builder
	b.WriteString(`SELECT status, COUNT(*)`)
	args := make([]any, 0, len(since))
	for _, t := range since {
		b.WriteString(`, COALESCE(SUM(CASE WHEN created_at >= ? THEN 1 ELSE 0 END), 0)`)
		args = append(args, s.tv(t))
	}
	b.WriteString(` FROM messages GROUP BY status ORDER BY status`)
	var out []persistence.StatusCount
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, b.String(), args...)
		out, err = collect(rows, err, func(r rowScanner) (persistence.StatusCount, error) {
			c := persistence.StatusCount{Since: make([]int, len(since))}
			dst := make([]any, 0, 2+len(since))
			dst = append(dst, &c.Status, &c.Total)
			for i := range c.Since {
				dst = append(dst, &c.Since[i])
			}
			if err := r.Scan(dst...); err != nil {
				return c, fmt.Errorf("read status count: %w", err)
			}
			return c, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count messages by status: %w", err)
	}
	return out, nil
}

// hourKeyLayout is the text both databases make of a creation time's UTC hour.
const hourKeyLayout = "2006-01-02T15"

// CountMessagesPerHour groups the messages created since by hour and status. The hour
// is cut from the time as text: SQLite stores the fixed-width UTC layout, and PostgreSQL
// formats its timestamptz in UTC the same way, so both answer the same keys.
func (s *Store) CountMessagesPerHour(ctx context.Context, since time.Time) ([]persistence.HourCount, error) {
	hour := `substr(created_at, 1, 13)`
	if s.dialect == DialectPostgres {
		hour = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24')`
	}
	q := `SELECT ` + hour + ` AS hour, status, COUNT(*) FROM messages WHERE created_at >= ? GROUP BY hour, status ORDER BY hour, status`
	var out []persistence.HourCount
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, q, s.tv(since))
		out, err = collect(rows, err, func(r rowScanner) (persistence.HourCount, error) {
			var c persistence.HourCount
			var key string
			if err := r.Scan(&key, &c.Status, &c.Count); err != nil {
				return c, fmt.Errorf("read hour count: %w", err)
			}
			h, err := time.Parse(hourKeyLayout, key)
			if err != nil {
				return c, fmt.Errorf("read hour count: hour %q: %w", key, err)
			}
			c.Hour = h.UTC()
			return c, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count messages per hour: %w", err)
	}
	return out, nil
}
