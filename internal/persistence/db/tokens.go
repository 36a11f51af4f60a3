package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

const maxTokenName = 64

// tokenUseGranularity bounds how often a token's last use is written: at most once a
// minute per token, so a busy API client does not turn every request into a commit.
const tokenUseGranularity = time.Minute

// CreateAPIToken stores a token's SHA-256 (hex) under a unique name; the token may use the
// whole REST API.
func (s *Store) CreateAPIToken(ctx context.Context, name, hash string) (persistence.APIToken, error) {
	return s.CreateScopedAPIToken(ctx, name, hash, "")
}

// CreateScopedAPIToken stores a token's SHA-256 (hex) under a unique name, scoped to the
// target instance target (empty: not scoped). The scope is part of the audit event.
func (s *Store) CreateScopedAPIToken(ctx context.Context, name, hash string, target persistence.InstanceName) (persistence.APIToken, error) {
	if name == "" {
		return persistence.APIToken{}, fmt.Errorf("create API token: %w", fieldMsg("name", "is empty"))
	}
	errs := []error{checkText("name", name, maxTokenName), checkSHA256("hash", hash, false)}
	if target != "" {
		errs = append(errs, check("target", target, persistence.ParseInstanceName))
	}
	for _, err := range errs {
		if err != nil {
			return persistence.APIToken{}, fmt.Errorf("create API token: %w", err)
		}
	}
	var out persistence.APIToken
	err := s.write(ctx, func(t *txn) (err error) {
		out, err = scanToken(t.queryRow(ctx, `INSERT INTO api_tokens (name, hash, created_at, scope_target) VALUES (?, ?, ?, ?)
			RETURNING `+tokenCols, name, hash, t.s.tv(t.now), string(target)))
		if err != nil {
			return err
		}
		changes := []audit.Change{audit.SecretChange("token")}
		if target != "" {
			changes = append(changes, audit.Change{Path: "target", New: jsonString(string(target))})
		}
		return t.audit(ctx, "create", "api_token", name, name, changes)
	})
	if isUniqueViolation(err) {
		return persistence.APIToken{}, fmt.Errorf("API token %q (or its hash) already exists: %w", name, persistence.ErrConflict)
	}
	if err != nil {
		return persistence.APIToken{}, fmt.Errorf("create API token %q: %w", name, err)
	}
	return out, nil
}

// ListAPITokens lists every token, revoked ones included, by name.
func (s *Store) ListAPITokens(ctx context.Context) ([]persistence.APIToken, error) {
	var out []persistence.APIToken
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+tokenCols+` FROM api_tokens ORDER BY name`)
		out, err = collect(rows, err, scanToken)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list API tokens: %w", err)
	}
	return out, nil
}

// RevokeAPIToken revokes a token by name; revoking it again keeps the first time.
func (s *Store) RevokeAPIToken(ctx context.Context, name string) error {
	return s.write(ctx, func(t *txn) error {
		var id int64
		err := t.queryRow(ctx, `SELECT id FROM api_tokens WHERE name = ?`, name).Scan(&id)
		if err != nil {
			return notFound(err, "API token %q", name)
		}
		res, err := t.exec(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, t.s.tv(t.now), id)
		if err != nil {
			return fmt.Errorf("revoke API token %q: %w", name, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // revoked before: nothing changed, nothing to record
		}
		return t.audit(ctx, "revoke", "api_token", name, name, []audit.Change{{Path: "revoked",
			Old: json.RawMessage(`false`), New: json.RawMessage(`true`)}})
	})
}

// FindAPIToken finds an unrevoked token by its hash and records its use, at most once a
// minute (a write only then).
func (s *Store) FindAPIToken(ctx context.Context, hash string) (persistence.APIToken, error) {
	var tk persistence.APIToken
	err := s.read(ctx, func(t *txn) (err error) {
		tk, err = scanToken(t.queryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE hash = ? AND revoked_at IS NULL`, hash))
		return notFound(err, "API token")
	})
	if err != nil {
		return persistence.APIToken{}, err
	}
	now := utc(s.now())
	if tk.LastUsedAt != nil && now.Sub(*tk.LastUsedAt) < tokenUseGranularity {
		return tk, nil
	}
	err = s.write(ctx, func(t *txn) error {
		_, err := t.exec(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND revoked_at IS NULL`, s.tv(now), tk.ID)
		return err
	})
	if err != nil {
		return persistence.APIToken{}, fmt.Errorf("record use of API token %q: %w", tk.Name, err)
	}
	tk.LastUsedAt = &now
	return tk, nil
}
