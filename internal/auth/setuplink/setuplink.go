// Package setuplink issues the one-time set-up links through which a user sets a password
// and enrols TOTP: for a new user, and again for a reset. The CLI (wharf users) and the web
// UI's users page both go through it, so a link is made, stored and timed one way.
package setuplink

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// TTL is how long a set-up link stays usable.
const TTL = 24 * time.Hour

// New returns a fresh token for a link and the hash the store keeps of it.
func New() (token, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("set-up link: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, Hash(token), nil
}

// Hash is how the store keys a link: the SHA-256 (hex) of the token as it appears in the
// URL. The token itself is never stored.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// URL is the link for token under the gateway's public base URL (no trailing slash).
func URL(base, token string) string { return base + "/ui/setup/" + token }

// Store is what issuing links needs of persistence.
type Store interface {
	CreateUser(ctx context.Context, u persistence.User) (persistence.User, error)
	BumpUserGeneration(ctx context.Context, id int64) error
	SetUserSetupToken(ctx context.Context, id int64, tokenHash string, expires time.Time) error
}

var _ Store = persistence.Store(nil)

// Create stores u (name, display name, role) as a new user holding a link valid until
// now+TTL, and returns the user and the link's token. A taken name is ErrConflict.
func Create(ctx context.Context, st Store, u persistence.User, now time.Time) (persistence.User, string, error) {
	token, hash, err := New()
	if err != nil {
		return persistence.User{}, "", err
	}
	expires := now.Add(TTL)
	u.SetupTokenHash, u.SetupExpiresAt = hash, &expires
	created, err := st.CreateUser(ctx, u)
	if err != nil {
		return persistence.User{}, "", fmt.Errorf("create user %s: %w", u.Name, err)
	}
	return created, token, nil
}

// Reset ends every session of user id and gives them a new link valid until now+TTL,
// returned with its expiry. The old credentials keep working until the link is used; a
// reset is often about a lost device, so the sessions end at once.
func Reset(ctx context.Context, st Store, id int64, now time.Time) (string, time.Time, error) {
	if err := st.BumpUserGeneration(ctx, id); err != nil {
		return "", time.Time{}, fmt.Errorf("reset user %d: %w", id, err)
	}
	token, hash, err := New()
	if err != nil {
		return "", time.Time{}, err
	}
	expires := now.Add(TTL)
	if err := st.SetUserSetupToken(ctx, id, hash, expires); err != nil {
		return "", time.Time{}, fmt.Errorf("reset user %d: %w", id, err)
	}
	return token, expires, nil
}
