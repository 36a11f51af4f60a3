package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// SweepLockKey is the PostgreSQL advisory lock the active sweeper holds. Its value only
// has to differ from other advisory locks taken on the same database.
const SweepLockKey int32 = 0x57686172 // "Whar"

// Advisory locks are database-wide while an installation is a schema (search_path), so
// the lock is the pair (key, hash of the current schema): installations in two schemas of
// one database each have their own.
const (
	lockSQL   = "SELECT pg_try_advisory_lock($1::int4, hashtext(current_schema()))"
	unlockSQL = "SELECT pg_advisory_unlock($1::int4, hashtext(current_schema()))"
)

// SessionLock is a session-level advisory lock held on a connection of its own: it lasts
// as long as that connection, so a process that dies (its connection closes) gives it up
// without anyone's help. On SQLite, where one process owns the database, it is always
// held and holds nothing.
type SessionLock struct {
	conn *sql.Conn
	key  int32
}

// TryLock takes the advisory lock key on a dedicated connection without waiting. It
// returns nil and no error when another session holds the lock.
func (s *Store) TryLock(ctx context.Context, key int32) (*SessionLock, error) {
	if s.dialect != DialectPostgres {
		return &SessionLock{key: key}, nil
	}
	conn, err := s.w.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("advisory lock %d: open a connection: %w", key, err)
	}
	var got bool
	if err := conn.QueryRowContext(ctx, lockSQL, key).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("advisory lock %d: %w", key, err)
	}
	if !got {
		// The connection goes back to the pool holding nothing.
		conn.Close()
		return nil, nil
	}
	return &SessionLock{conn: conn, key: key}, nil
}

// Check reports whether the lock is still held: its connection still answers. An error
// means the session, and with it the lock, may be gone; the caller releases and retries.
func (l *SessionLock) Check(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	if err := l.conn.PingContext(ctx); err != nil {
		return fmt.Errorf("advisory lock %d: connection lost: %w", l.key, err)
	}
	return nil
}

// Release gives the lock up and closes its connection. The connection is discarded, not
// pooled: ending the session releases the lock whether or not the unlock got through (the
// database may be out of reach), and no pooled session can keep it.
func (l *SessionLock) Release(ctx context.Context) {
	if l.conn == nil {
		return
	}
	_, _ = l.conn.ExecContext(ctx, unlockSQL, l.key)
	// Returning driver.ErrBadConn from Raw closes the driver connection itself.
	_ = l.conn.Raw(func(any) error { return driver.ErrBadConn })
	l.conn.Close()
}
