// Package apitoken issues the bearer tokens the REST API accepts. The CLI (wharf tokens)
// and the web UI create them through Create, and the API looks them up by Hash, so a
// token is made and stored one way.
package apitoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"wharf/internal/persistence"
)

// Prefix starts every token, so a leaked one is recognisable in logs and scanners.
const Prefix = "wharf_"

// Hash is how a token is stored and looked up: the hex SHA-256 of the token. A token is
// random and long, so a plain hash is enough.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// New returns a fresh token and its hash.
func New() (token, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("API token: %w", err)
	}
	token = Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, Hash(token), nil
}

// CheckName refuses a name that is not 1 to 64 of a-z, 0-9, _ and -, the rule of
// instance names, with a *persistence.FieldError for "name".
func CheckName(name string) error {
	if _, err := persistence.ParseInstanceName(name); err != nil {
		return &persistence.FieldError{Field: "name", Message: "use 1 to 64 of a-z, 0-9, _ and -"}
	}
	return nil
}

// Store is what creating a token needs of persistence.
type Store interface {
	CreateScopedAPIToken(ctx context.Context, name, hash string, target persistence.InstanceName) (persistence.APIToken, error)
}

var _ Store = persistence.Store(nil)

// Create checks name, stores a new token under it, scoped to the target instance target
// when that is not empty (records.CreateAPIToken checks the instance is a target), and
// returns the record and the token, which exists nowhere else afterwards: show it once.
// A taken name is ErrConflict.
func Create(ctx context.Context, st Store, name string, target persistence.InstanceName) (persistence.APIToken, string, error) {
	if err := CheckName(name); err != nil {
		return persistence.APIToken{}, "", err
	}
	token, hash, err := New()
	if err != nil {
		return persistence.APIToken{}, "", err
	}
	rec, err := st.CreateScopedAPIToken(ctx, name, hash, target)
	if err != nil {
		return persistence.APIToken{}, "", fmt.Errorf("create token %s: %w", name, err)
	}
	return rec, token, nil
}
