package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

// callbackSecretUseGranularity bounds how often a secret's last use is written, so a busy
// in-house system does not turn every callback into a commit.
const callbackSecretUseGranularity = time.Minute

// maxSealedCallbackSecret bounds a sealed secret (a whsec_ secret is about 50 bytes).
const maxSealedCallbackSecret = 1024

const callbackSecretCols = `id, target, sealed, created_at, last_used_at, revoked_at`

func scanCallbackSecret(r rowScanner) (persistence.CallbackSecret, error) {
	var c persistence.CallbackSecret
	var target string
	err := r.Scan(&c.ID, &target, &c.Sealed, timeCol{&c.CreatedAt}, nullTimeCol{&c.LastUsedAt}, nullTimeCol{&c.RevokedAt})
	if err != nil {
		return c, fmt.Errorf("read callback secret: %w", err)
	}
	c.Target = persistence.InstanceName(target)
	return c, nil
}

// CreateCallbackSecret stores a new sealed signing secret for the status callbacks of
// target, with an audit event that marks the secret without its value.
func (s *Store) CreateCallbackSecret(ctx context.Context, target persistence.InstanceName, sealed []byte) (persistence.CallbackSecret, error) {
	if len(sealed) == 0 || len(sealed) > maxSealedCallbackSecret {
		return persistence.CallbackSecret{}, fmt.Errorf("create callback secret of %s: %w", target, fieldMsg("secret", "sealed secret must be 1 to %d bytes", maxSealedCallbackSecret))
	}
	var out persistence.CallbackSecret
	err := s.write(ctx, func(t *txn) (err error) {
		var name string
		if err := t.queryRow(ctx, `SELECT name FROM plugin_configs WHERE name = ?`, string(target)).Scan(&name); err != nil {
			return notFound(err, "plugin instance %q", target)
		}
		out, err = scanCallbackSecret(t.queryRow(ctx, `INSERT INTO callback_secrets (target, sealed, created_at)
			VALUES (?, ?, ?) RETURNING `+callbackSecretCols, string(target), sealed, t.s.tv(t.now)))
		if err != nil {
			return err
		}
		id := strconv.FormatInt(out.ID, 10)
		return t.audit(ctx, "create", "callback_secret", id, string(target), []audit.Change{audit.SecretChange("secret"),
			{Path: "target", New: jsonString(string(target))}})
	})
	if err != nil {
		return persistence.CallbackSecret{}, fmt.Errorf("create callback secret of %s: %w", target, err)
	}
	return out, nil
}

// ListCallbackSecrets lists target's secrets, revoked ones included, oldest first.
func (s *Store) ListCallbackSecrets(ctx context.Context, target persistence.InstanceName) ([]persistence.CallbackSecret, error) {
	var out []persistence.CallbackSecret
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+callbackSecretCols+` FROM callback_secrets WHERE target = ? ORDER BY id`, string(target))
		out, err = collect(rows, err, scanCallbackSecret)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list callback secrets of %s: %w", target, err)
	}
	return out, nil
}

// RevokeCallbackSecret revokes one of target's secrets; revoking it again keeps the first
// time and writes nothing.
func (s *Store) RevokeCallbackSecret(ctx context.Context, target persistence.InstanceName, id int64) error {
	err := s.write(ctx, func(t *txn) error {
		var got int64
		if err := t.queryRow(ctx, `SELECT id FROM callback_secrets WHERE id = ? AND target = ?`, id, string(target)).Scan(&got); err != nil {
			return notFound(err, "callback secret %d of %s", id, target)
		}
		res, err := t.exec(ctx, `UPDATE callback_secrets SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, t.s.tv(t.now), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return t.audit(ctx, "revoke", "callback_secret", strconv.FormatInt(id, 10), string(target),
			[]audit.Change{{Path: "revoked", Old: json.RawMessage(`false`), New: json.RawMessage(`true`)}})
	})
	if err != nil {
		return fmt.Errorf("revoke callback secret %d of %s: %w", id, target, err)
	}
	return nil
}

// TouchCallbackSecret records that a secret verified a callback, at most once a minute
// per secret (a write only then).
func (s *Store) TouchCallbackSecret(ctx context.Context, sec persistence.CallbackSecret) error {
	now := utc(s.now())
	if sec.LastUsedAt != nil && now.Sub(*sec.LastUsedAt) < callbackSecretUseGranularity {
		return nil
	}
	err := s.write(ctx, func(t *txn) error {
		_, err := t.exec(ctx, `UPDATE callback_secrets SET last_used_at = ? WHERE id = ? AND revoked_at IS NULL`, s.tv(now), sec.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("record use of callback secret %d: %w", sec.ID, err)
	}
	return nil
}
