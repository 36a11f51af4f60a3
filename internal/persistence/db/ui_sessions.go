package db

import (
	"context"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// CreateUISession records a web UI session by the SHA-256 (hex) of its id, for userID,
// valid until expiresAt. Sessions that expired before createdAt are pruned in the same
// transaction, so the table holds no more than the sessions that can still be used.
func (s *Store) CreateUISession(ctx context.Context, idHash string, userID int64, createdAt, expiresAt time.Time) error {
	if err := checkSHA256("id_hash", idHash, false); err != nil {
		return fmt.Errorf("create UI session: %w", err)
	}
	if !expiresAt.After(createdAt) {
		return fmt.Errorf("create UI session: %w", fieldMsg("expires_at", "is not after created_at"))
	}
	return s.write(ctx, func(t *txn) error {
		if _, err := t.exec(ctx, `DELETE FROM ui_sessions WHERE expires_at <= ?`, t.s.tv(createdAt)); err != nil {
			return fmt.Errorf("prune expired UI sessions: %w", err)
		}
		if err := t.userExists(ctx, userID, "create UI session of"); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO ui_sessions (id_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			idHash, userID, t.s.tv(createdAt), t.s.tv(expiresAt))
		if err != nil {
			return fmt.Errorf("create UI session of user %d: %w", userID, err)
		}
		return nil
	})
}

// GetUISessionUser returns the user of the session recorded under idHash: one lookup by
// primary key, run for every signed-in request. A session that was signed out, ended
// with all of its user's sessions or pruned is ErrNotFound.
func (s *Store) GetUISessionUser(ctx context.Context, idHash string) (persistence.User, error) {
	var out persistence.User
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `SELECT `+userCols+` FROM users
			WHERE id = (SELECT user_id FROM ui_sessions WHERE id_hash = ?)`, idHash))
		return notFound(err, "UI session")
	})
	return out, err
}

// DeleteUISession ends the session recorded under idHash; ending one that is already
// gone is not an error, so signing out twice is harmless.
func (s *Store) DeleteUISession(ctx context.Context, idHash string) error {
	return s.write(ctx, func(t *txn) error {
		if _, err := t.exec(ctx, `DELETE FROM ui_sessions WHERE id_hash = ?`, idHash); err != nil {
			return fmt.Errorf("delete UI session: %w", err)
		}
		return nil
	})
}

// endUISessions deletes every session of a user, in the transaction that ends them by a
// generation bump.
func (t *txn) endUISessions(ctx context.Context, userID int64) error {
	if _, err := t.exec(ctx, `DELETE FROM ui_sessions WHERE user_id = ?`, userID); err != nil {
		return fmt.Errorf("end UI sessions of user %d: %w", userID, err)
	}
	return nil
}
