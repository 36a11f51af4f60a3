// Package session keeps the web UI's sign-in sessions, CSRF tokens and security headers.
//
// A session's state lives in its cookie, sealed with AES-256-GCM under the session key,
// and the server keeps one row per session: the SHA-256 of a random id the cookie
// carries. Signing out deletes that row, so a copy of the cookie taken before is worth
// nothing afterwards; looking the row up is the one query a signed-in request costs, and
// it returns the user as well. The cookie also carries the user's generation, and a
// session is valid only while it equals the stored one, so disabling, resetting or
// signing a user out everywhere is one bump of that counter. Idle and absolute lifetimes
// bound a session even when nothing ends it.
package session

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"wharf/internal/persistence"
)

// ErrNoSession is every reason a request has no valid session: no cookie, a cookie that
// does not open, an expired one, or a user who is gone, cannot sign in or has a new
// generation. One error, so nothing tells a client which check failed.
var ErrNoSession = errors.New("no valid session")

// Store is what the manager needs of the store: the server-side record of each session,
// keyed by the SHA-256 (hex) of the session's id.
type Store interface {
	// CreateUISession records a new session; it may prune sessions that expired before
	// createdAt.
	CreateUISession(ctx context.Context, idHash string, userID int64, createdAt, expiresAt time.Time) error
	// GetUISessionUser returns the user of a recorded session, or persistence.ErrNotFound
	// when the session was ended or never existed.
	GetUISessionUser(ctx context.Context, idHash string) (persistence.User, error)
	// DeleteUISession ends one session; ending one that is gone is not an error.
	DeleteUISession(ctx context.Context, idHash string) error
}

// touchInterval bounds how often Touch rewrites the cookie, so an active user does not
// get a Set-Cookie on every request. Idle expiry is therefore exact only to this.
const touchInterval = time.Minute

// Config is what a Manager is built from.
type Config struct {
	Key Key
	// CookieName is DefaultCookieName when empty, or with Secure SecureCookieName.
	CookieName string
	// Secure marks the cookie Secure and scopes it to the whole host (Path=/), as the
	// __Host- prefix of SecureCookieName demands; set it when the public URL is https.
	Secure bool
	// IdleTimeout ends a session unused for this long; AbsoluteTimeout ends it this long
	// after sign-in whatever its use. Both are required.
	IdleTimeout     time.Duration
	AbsoluteTimeout time.Duration
	Store           Store
	Now             func() time.Time // time.Now when nil
	Logger          *slog.Logger     // slog.Default() when nil
}

// DefaultCookieName is the cookie used when Config.CookieName is empty; SecureCookieName
// when the public URL is https too. Browsers accept a __Host- cookie only when it is
// Secure, has no Domain and has Path=/, so no other host of the domain nor a plain-http
// page can plant or shadow it.
const (
	DefaultCookieName = "wharf_session"
	SecureCookieName  = "__Host-wharf_session"
)

// Manager issues, opens and ends session cookies.
type Manager struct {
	aead     cipher.AEAD
	name     string
	secure   bool
	idle     time.Duration
	absolute time.Duration
	store    Store
	now      func() time.Time
	log      *slog.Logger
}

// NewManager checks cfg and returns a Manager.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Store == nil {
		return nil, errors.New("session manager: no store")
	}
	if cfg.IdleTimeout <= 0 || cfg.AbsoluteTimeout <= 0 {
		return nil, errors.New("session manager: idle and absolute lifetimes must be positive")
	}
	if cfg.IdleTimeout > cfg.AbsoluteTimeout {
		return nil, errors.New("session manager: idle lifetime exceeds the absolute lifetime")
	}
	block, err := aes.NewCipher(cfg.Key.b[:])
	if err != nil {
		return nil, fmt.Errorf("session manager: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("session manager: %w", err)
	}
	m := &Manager{
		aead: aead, name: cfg.CookieName, secure: cfg.Secure,
		idle: cfg.IdleTimeout, absolute: cfg.AbsoluteTimeout,
		store: cfg.Store, now: cfg.Now, log: cfg.Logger,
	}
	if m.name == "" {
		m.name = DefaultCookieName
		if m.secure {
			m.name = SecureCookieName
		}
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	return m, nil
}

// Session is a signed-in user's session as read from its cookie.
type Session struct {
	UserID     int64
	Generation int64
	IssuedAt   time.Time
	LastSeen   time.Time
	// CSRFToken stays the same for the whole session; forms carry it in the field
	// "csrf_token", scripts in the header "X-CSRF-Token".
	CSRFToken string
	// User is the user as stored when the session was loaded (or issued).
	User persistence.User
	// id names the session's server-side record; it never leaves the sealed cookie.
	id string
}

// payload is the sealed content of the cookie; times are Unix seconds to keep it short.
type payload struct {
	ID         string `json:"d"`
	UserID     int64  `json:"u"`
	Generation int64  `json:"g"`
	IssuedAt   int64  `json:"i"`
	LastSeen   int64  `json:"s"`
	CSRFToken  string `json:"c"`
}

// Issue starts a session for user, who must be able to sign in: it records the session
// and writes its cookie. Call it after the user has proved who they are, with the request
// that proved it; it also ends any session the browser had, so neither a token planted
// before sign-in nor a copy of the replaced cookie survives it.
func (m *Manager) Issue(w http.ResponseWriter, r *http.Request, user persistence.User) (*Session, error) {
	ctx := r.Context()
	now := m.now().Truncate(time.Second)
	if user.ID == 0 || !user.CanSignIn(now) {
		return nil, fmt.Errorf("issue session for user %d: the user cannot sign in", user.ID)
	}
	if c, err := r.Cookie(m.name); err == nil {
		if p, ok := m.open(c.Value); ok && p.ID != "" {
			if err := m.store.DeleteUISession(ctx, hashID(p.ID)); err != nil {
				return nil, fmt.Errorf("issue session for user %d: end the browser's previous session: %w", user.ID, err)
			}
		}
	}
	s := &Session{
		UserID: user.ID, Generation: user.Generation, IssuedAt: now, LastSeen: now,
		CSRFToken: randomToken(), User: user, id: randomToken(),
	}
	if err := m.store.CreateUISession(ctx, hashID(s.id), user.ID, now, now.Add(m.absolute)); err != nil {
		return nil, fmt.Errorf("issue session for user %d: %w", user.ID, err)
	}
	if err := m.write(w, s); err != nil {
		return nil, fmt.Errorf("issue session for user %d: %w", user.ID, err)
	}
	return s, nil
}

// Load opens the request's session cookie and checks it: lifetimes first, then the
// server-side record and its user (recorded, can sign in, same generation). Every refusal
// is ErrNoSession; only a store failure other than a missing record is returned as
// itself, because it says nothing about the session and must not send the user to sign
// in again.
func (m *Manager) Load(r *http.Request) (*Session, error) {
	c, err := r.Cookie(m.name)
	if err != nil {
		return nil, ErrNoSession
	}
	p, ok := m.open(c.Value)
	if !ok {
		return nil, ErrNoSession
	}
	now := m.now()
	issued, seen := time.Unix(p.IssuedAt, 0), time.Unix(p.LastSeen, 0)
	if p.ID == "" || p.UserID == 0 || p.CSRFToken == "" || seen.Before(issued) ||
		now.Sub(issued) >= m.absolute || now.Sub(seen) >= m.idle {
		return nil, ErrNoSession
	}
	u, err := m.store.GetUISessionUser(r.Context(), hashID(p.ID))
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	if u.ID != p.UserID || !u.CanSignIn(now) || u.Generation != p.Generation {
		return nil, ErrNoSession
	}
	return &Session{
		UserID: p.UserID, Generation: p.Generation, IssuedAt: issued, LastSeen: seen,
		CSRFToken: p.CSRFToken, User: u, id: p.ID,
	}, nil
}

// End signs s out: its record is deleted, so the cookie (and any copy of it) no longer
// opens a session, and the browser's cookie is expired. The cookie is expired even when
// the store fails, whose error is returned.
func (m *Manager) End(ctx context.Context, w http.ResponseWriter, s *Session) error {
	m.Clear(w)
	if err := m.store.DeleteUISession(ctx, hashID(s.id)); err != nil {
		return fmt.Errorf("end session of user %d: %w", s.UserID, err)
	}
	return nil
}

// Touch records that s is in use now, rewriting its cookie only when the last record is
// at least a minute old. It must run before the response's header is written.
func (m *Manager) Touch(w http.ResponseWriter, s *Session) error {
	now := m.now().Truncate(time.Second)
	if now.Sub(s.LastSeen) < touchInterval {
		return nil
	}
	prev := s.LastSeen
	s.LastSeen = now
	if err := m.write(w, s); err != nil {
		s.LastSeen = prev
		return fmt.Errorf("touch session of user %d: %w", s.UserID, err)
	}
	return nil
}

// Clear expires the session cookie in the browser. It ends only this browser's copy;
// ending every copy is a generation bump in the store.
func (m *Manager) Clear(w http.ResponseWriter) {
	c := m.cookie("")
	c.MaxAge = -1
	http.SetCookie(w, c)
}

// write seals s into the cookie, which the browser keeps no longer than the absolute
// lifetime allows.
func (m *Manager) write(w http.ResponseWriter, s *Session) error {
	value, err := m.seal(payload{
		ID: s.id, UserID: s.UserID, Generation: s.Generation, IssuedAt: s.IssuedAt.Unix(),
		LastSeen: s.LastSeen.Unix(), CSRFToken: s.CSRFToken,
	})
	if err != nil {
		return err
	}
	c := m.cookie(value)
	c.MaxAge = int(s.IssuedAt.Add(m.absolute).Sub(m.now()) / time.Second)
	if c.MaxAge <= 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
	return nil
}

func (m *Manager) cookie(value string) *http.Cookie {
	path := "/ui"
	if m.secure {
		path = "/" // the __Host- prefix admits no other path
	}
	return &http.Cookie{
		Name: m.name, Value: value, Path: path,
		HttpOnly: true, Secure: m.secure, SameSite: http.SameSiteLaxMode,
	}
}

// randomToken returns 32 random bytes as unpadded base64url.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails; crypto/rand aborts the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashID is the key of a session's record: the store never holds the id itself, so a
// read of the table gives nothing a cookie could be made from.
func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// seal encrypts p as base64url(nonce || ciphertext). The cookie name is the additional
// data, so a value cannot be replayed under another cookie sealed with the same key.
func (m *Manager) seal(p payload) (string, error) {
	plain, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, m.aead.NonceSize(), m.aead.NonceSize()+len(plain)+m.aead.Overhead())
	rand.Read(nonce) // never fails; crypto/rand aborts the program instead
	sealed := m.aead.Seal(nonce, nonce, plain, []byte(m.name))
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// open reverses seal; ok is false for anything that was not sealed by this key.
func (m *Manager) open(value string) (p payload, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < m.aead.NonceSize()+m.aead.Overhead() {
		return p, false
	}
	n := m.aead.NonceSize()
	plain, err := m.aead.Open(nil, raw[:n], raw[n:], []byte(m.name))
	if err != nil {
		return p, false
	}
	if err := json.Unmarshal(plain, &p); err != nil {
		return p, false
	}
	return p, true
}
