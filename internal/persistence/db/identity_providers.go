package db

import (
	"bytes"
	"context"
	"fmt"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

const (
	maxIssuerURL    = 1024
	maxClientID     = 255
	maxSealedSecret = 4096
	maxAudience     = 255
	maxScopes       = 1024
)

const providerCols = `name, display_name, issuer_url, client_id, client_secret, audience, scopes, enabled, created_at, updated_at`

func scanProvider(r rowScanner) (persistence.IdentityProvider, error) {
	var p persistence.IdentityProvider
	err := r.Scan(&p.Name, &p.DisplayName, &p.IssuerURL, &p.ClientID, &p.SealedSecret, &p.Audience, &p.Scopes,
		&p.Enabled, timeCol{&p.CreatedAt}, timeCol{&p.UpdatedAt})
	if err != nil {
		return p, fmt.Errorf("read identity provider: %w", err)
	}
	if len(p.SealedSecret) == 0 {
		p.SealedSecret = nil
	}
	return p, nil
}

// checkProvider holds the store's own limits; the rules an operator's input must meet
// (an https issuer, …) are package records'.
func checkProvider(p *persistence.IdentityProvider) error {
	if _, err := persistence.ParseProviderName(p.Name); err != nil {
		return fieldErr("name", err)
	}
	if p.DisplayName == "" {
		p.DisplayName = p.Name
	}
	if p.IssuerURL == "" {
		return fieldMsg("issuer_url", "is empty")
	}
	if p.ClientID == "" {
		return fieldMsg("client_id", "is empty")
	}
	for _, c := range []struct {
		field, v string
		max      int
	}{{"display_name", p.DisplayName, maxDisplayName}, {"issuer_url", p.IssuerURL, maxIssuerURL},
		{"client_id", p.ClientID, maxClientID}, {"audience", p.Audience, maxAudience}, {"scopes", p.Scopes, maxScopes}} {
		if err := checkText(c.field, c.v, c.max); err != nil {
			return err
		}
	}
	if len(p.SealedSecret) > maxSealedSecret {
		return fieldMsg("client_secret", "longer than %d bytes", maxSealedSecret)
	}
	if p.SealedSecret == nil {
		p.SealedSecret = []byte{}
	}
	return nil
}

// CreateIdentityProvider inserts a provider; a taken name or issuer URL is ErrConflict.
func (s *Store) CreateIdentityProvider(ctx context.Context, p persistence.IdentityProvider) (persistence.IdentityProvider, error) {
	if err := checkProvider(&p); err != nil {
		return persistence.IdentityProvider{}, fmt.Errorf("create identity provider: %w", err)
	}
	var out persistence.IdentityProvider
	err := s.write(ctx, func(t *txn) (err error) {
		now := t.s.tv(t.now)
		out, err = scanProvider(t.queryRow(ctx, `INSERT INTO identity_providers (`+providerCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+providerCols, p.Name, p.DisplayName, p.IssuerURL, p.ClientID,
			p.SealedSecret, p.Audience, p.Scopes, p.Enabled, now, now))
		if isUniqueViolation(err) {
			return fmt.Errorf("identity provider %q: its name or issuer URL is taken: %w", p.Name, persistence.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("create identity provider %q: %w", p.Name, err)
		}
		return t.auditProvider(ctx, "create", nil, &out)
	})
	return out, err
}

// GetIdentityProvider returns one provider with its sealed secret.
func (s *Store) GetIdentityProvider(ctx context.Context, name string) (persistence.IdentityProvider, error) {
	var out persistence.IdentityProvider
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanProvider(t.queryRow(ctx, `SELECT `+providerCols+` FROM identity_providers WHERE name = ?`, name))
		return notFound(err, "identity provider %q", name)
	})
	return out, err
}

// ListIdentityProviders lists every provider by name.
func (s *Store) ListIdentityProviders(ctx context.Context) ([]persistence.IdentityProvider, error) {
	var out []persistence.IdentityProvider
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+providerCols+` FROM identity_providers ORDER BY name`)
		out, err = collect(rows, err, scanProvider)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list identity providers: %w", err)
	}
	return out, nil
}

// UpdateIdentityProvider replaces a provider's fields but its name and creation time.
func (s *Store) UpdateIdentityProvider(ctx context.Context, p persistence.IdentityProvider) (persistence.IdentityProvider, error) {
	if err := checkProvider(&p); err != nil {
		return persistence.IdentityProvider{}, fmt.Errorf("update identity provider: %w", err)
	}
	var out persistence.IdentityProvider
	err := s.write(ctx, func(t *txn) error {
		before, err := scanProvider(t.queryRow(ctx, `SELECT `+providerCols+` FROM identity_providers WHERE name = ?`+t.s.lockRows, p.Name))
		if err != nil {
			return notFound(err, "identity provider %q", p.Name)
		}
		out, err = scanProvider(t.queryRow(ctx, `UPDATE identity_providers SET display_name = ?, issuer_url = ?, client_id = ?,
			client_secret = ?, audience = ?, scopes = ?, enabled = ?, updated_at = ? WHERE name = ? RETURNING `+providerCols,
			p.DisplayName, p.IssuerURL, p.ClientID, p.SealedSecret, p.Audience, p.Scopes, p.Enabled, t.s.tv(t.now), p.Name))
		if isUniqueViolation(err) {
			return fmt.Errorf("identity provider %q: issuer URL %q is taken: %w", p.Name, p.IssuerURL, persistence.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("update identity provider %q: %w", p.Name, err)
		}
		return t.auditProvider(ctx, "update", &before, &out)
	})
	return out, err
}

// DeleteIdentityProvider deletes a provider. Users it created stay, linked to their
// identity, and sign in again once a provider of the same issuer is configured.
func (s *Store) DeleteIdentityProvider(ctx context.Context, name string) error {
	return s.write(ctx, func(t *txn) error {
		before, err := scanProvider(t.queryRow(ctx, `SELECT `+providerCols+` FROM identity_providers WHERE name = ?`+t.s.lockRows, name))
		if err != nil {
			return notFound(err, "identity provider %q", name)
		}
		if _, err := t.exec(ctx, `DELETE FROM identity_providers WHERE name = ?`, name); err != nil {
			return fmt.Errorf("delete identity provider %q: %w", name, err)
		}
		return t.auditProvider(ctx, "delete", &before, nil)
	})
}

// auditProvider records a provider's change by field, and its sealed client secret only
// as changed.
func (t *txn) auditProvider(ctx context.Context, action string, before, after *persistence.IdentityProvider) error {
	type view struct {
		DisplayName string `json:"display_name"`
		IssuerURL   string `json:"issuer_url"`
		ClientID    string `json:"client_id"`
		Audience    string `json:"audience"`
		Scopes      string `json:"scopes"`
		Enabled     bool   `json:"enabled"`
	}
	var b, a any
	var bs, as []byte
	name := ""
	if before != nil {
		b, bs, name = view{before.DisplayName, before.IssuerURL, before.ClientID, before.Audience, before.Scopes, before.Enabled},
			before.SealedSecret, before.Name
	}
	if after != nil {
		a, as, name = view{after.DisplayName, after.IssuerURL, after.ClientID, after.Audience, after.Scopes, after.Enabled},
			after.SealedSecret, after.Name
	}
	changes, err := audit.Diff(b, a)
	if err != nil {
		return fmt.Errorf("audit %s identity provider %q: %w", action, name, err)
	}
	if !bytes.Equal(bs, as) && len(bs)+len(as) > 0 {
		changes = append(changes, audit.SecretChange("client_secret"))
	}
	return t.audit(ctx, action, "identity_provider", name, name, changes)
}
