package db

import (
	"fmt"
	"time"
)

// Times are stored in UTC with microsecond precision: timestamptz on PostgreSQL, and on
// SQLite text in one fixed-width layout, so that comparing the text compares the times
// and range queries read the same on both databases.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000Z"

func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func formatTime(t time.Time) string { return utc(t).Format(sqliteTimeLayout) }

// tv is the argument for a time column.
func (s *Store) tv(t time.Time) any {
	if s.dialect == DialectSQLite {
		return formatTime(t)
	}
	return utc(t)
}

// tvNull is the argument for a nullable time column: NULL for the zero time.
func (s *Store) tvNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.tv(t)
}

func (s *Store) tvPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.tvNull(*t)
}

// timeCol scans a time column of either database into a time.Time in UTC.
type timeCol struct{ dst *time.Time }

func (c timeCol) Scan(src any) error {
	t, err := parseTimeValue(src)
	if err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("unexpected NULL time")
	}
	*c.dst = *t
	return nil
}

// nullTimeCol scans a nullable time column; NULL leaves nil.
type nullTimeCol struct{ dst **time.Time }

func (c nullTimeCol) Scan(src any) error {
	t, err := parseTimeValue(src)
	if err != nil {
		return err
	}
	*c.dst = t
	return nil
}

func parseTimeValue(src any) (*time.Time, error) {
	switch v := src.(type) {
	case nil:
		return nil, nil
	case time.Time:
		t := utc(v)
		return &t, nil
	case string:
		return parseTimeText(v)
	case []byte:
		return parseTimeText(string(v))
	default:
		return nil, fmt.Errorf("cannot scan %T into a time", src)
	}
}

func parseTimeText(s string) (*time.Time, error) {
	t, err := time.Parse(sqliteTimeLayout, s)
	if err != nil {
		return nil, fmt.Errorf("invalid stored time %q", s)
	}
	return &t, nil
}
