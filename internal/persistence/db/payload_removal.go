package db

import (
	"context"
	"fmt"

	"wharf/internal/persistence"
)

// ErasedPayloads lists at most limit payload records of erased messages: blobs an erasure
// still has to delete (its commit came first), in message order.
func (s *Store) ErasedPayloads(ctx context.Context, limit int) ([]persistence.Payload, error) {
	var out []persistence.Payload
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+payloadCols+` FROM payloads
			WHERE message_id IN (SELECT id FROM messages WHERE erased_at IS NOT NULL)
			ORDER BY message_id, stage LIMIT ?`, limit)
		out, err = collect(rows, err, scanPayload)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list payloads of erased messages: %w", err)
	}
	return out, nil
}

// DeletePayloadRecords deletes the records of payloads whose blobs are deleted, in one
// transaction. It is the second half of removing a payload (the blob first, so a crash
// between the two leaves a record that names a blob to delete again, never a blob that
// nothing names); erasure and retention share it.
func (s *Store) DeletePayloadRecords(ctx context.Context, ps []persistence.Payload) error {
	if len(ps) == 0 {
		return nil
	}
	err := s.write(ctx, func(t *txn) error {
		for _, p := range ps {
			if _, err := t.exec(ctx, `DELETE FROM payloads WHERE message_id = ? AND stage = ? AND key = ?`, p.MessageID, p.Stage, p.Key); err != nil {
				return fmt.Errorf("payload %s of message %d: %w", p.Stage, p.MessageID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete payload records: %w", err)
	}
	return nil
}

// ReclaimFreedSpace makes deleted and overwritten content unreadable from the database's
// files as far as the database allows: on SQLite (whose writer zeroes freed space, see
// openSQLite) it checkpoints the write-ahead log into the database file and truncates
// the log, which still holds the pages as they were before; PostgreSQL reclaims dead row
// versions by its own (auto)vacuum and needs nothing here.
func (s *Store) ReclaimFreedSpace(ctx context.Context) error {
	if s.dialect != DialectSQLite {
		return nil
	}
	var busy, logPages, done int
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done); err != nil {
		return fmt.Errorf("checkpoint the write-ahead log: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("checkpoint the write-ahead log: readers held it (%d of %d pages copied)", done, logPages)
	}
	return nil
}
