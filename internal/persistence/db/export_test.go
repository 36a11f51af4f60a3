package db

import (
	"context"

	"github.com/uptrace/bun"
)

// Hooks for the external tests: raw statements (to corrupt rows or set columns no method
// sets yet) and the schema step of Open.

// ExecRaw runs one statement with ? placeholders on the writer.
func ExecRaw(ctx context.Context, s *Store, q string, args ...any) error {
	_, err := s.w.DB.ExecContext(ctx, s.rebind(q), args...)
	return err
}

// QueryInt runs a query returning one integer on the writer.
func QueryInt(ctx context.Context, s *Store, q string, args ...any) (int64, error) {
	var n int64
	err := s.w.DB.QueryRowContext(ctx, s.rebind(q), args...).Scan(&n)
	return n, err
}

// Migrate runs the schema step of Open again.
func Migrate(ctx context.Context, s *Store) error { return s.migrate(ctx) }

// BunDB exposes the writer for the placeholder benchmark.
func BunDB(s *Store) *bun.DB { return s.w }

// Rebind exposes the placeholder rewriting.
func Rebind(s *Store, q string) string { return s.rebind(q) }

// TimeArg exposes the time encoding of the store's dialect.
var TimeArg = (*Store).tv

// QueryText runs a query returning one text value on the writer, or on the read pool.
func QueryText(ctx context.Context, s *Store, reader bool, q string) (string, error) {
	db := s.w
	if reader {
		db = s.r
	}
	var v string
	err := db.DB.QueryRowContext(ctx, s.rebind(q)).Scan(&v)
	return v, err
}

// HoldWriter opens a write transaction that has written (so it holds the database's
// write lock on SQLite) and returns the function that rolls it back.
func HoldWriter(ctx context.Context, s *Store) (func(), error) {
	tx, err := s.w.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE id_counters SET next_id = next_id WHERE name = 'message'`)); err != nil {
		tx.Rollback()
		return nil, err
	}
	return func() { tx.Rollback() }, nil
}

// QueryBytes runs a query returning one binary value on the writer.
func QueryBytes(ctx context.Context, s *Store, q string, args ...any) ([]byte, error) {
	var v []byte
	err := s.w.DB.QueryRowContext(ctx, s.rebind(q), args...).Scan(&v)
	return v, err
}

// GroupQueued is how many write transactions wait for the current group to end.
func GroupQueued(s *Store) int {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return len(s.group.queue)
}

// GroupsCommitted is how many groups of several write transactions committed together.
func GroupsCommitted(s *Store) int64 { return s.group.grouped.Load() }

// Counts returns the transactions the store has begun and the statements they ran.
func Counts(s *Store) (transactions, statements int64) {
	return s.counts.transactions.Load(), s.counts.statements.Load()
}
