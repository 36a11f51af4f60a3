// Package session keeps the web UI's sign-in sessions, CSRF tokens and security headers.
//
// A session lives only in its cookie, sealed with AES-256-GCM under the session key:
// there is no server-side table. The cookie carries the user's generation, and a session
// is valid only while it equals the stored one, so disabling, resetting or signing a user
// out everywhere is one bump of that counter. Idle and absolute lifetimes bound a session
// even when nothing bumps it.
package session

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
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

// Users is what the manager needs of the store to check a session's user.
type Users interface {
	GetUser(ctx context.Context, id int64) (persistence.User, error)
}

// touchInterval bounds how often Touch rewrites the cookie, so an active user does not
// get a Set-Cookie on every request. Idle expiry is therefore exact only to this.
const touchInterval = time.Minute

// Config is what a Manager is built from.
type Config struct {
	Key        Key
	CookieName string // "wharf_session" when empty
	// Secure marks the cookie Secure; set it when the public URL is https.
	Secure bool
	// IdleTimeout ends a session unused for this long; AbsoluteTimeout ends it this long
	// after sign-in whatever its use. Both are required.
	IdleTimeout     time.Duration
	AbsoluteTimeout time.Duration
	Users           Users
	Now             func() time.Time // time.Now when nil
	Logger          *slog.Logger     // slog.Default() when nil
}

// DefaultCookieName is the cookie used when Config.CookieName is empty.
const DefaultCookieName = "wharf_session"

// Manager issues, opens and ends session cookies.
type Manager struct {
	aead     cipher.AEAD
	name     string
	secure   bool
	idle     time.Duration
	absolute time.Duration
	users    Users
	now      func() time.Time
	log      *slog.Logger
}

// NewManager checks cfg and returns a Manager.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Users == nil {
		return nil, errors.New("session manager: no user store")
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
		users: cfg.Users, now: cfg.Now, log: cfg.Logger,
	}
	if m.name == "" {
		m.name = DefaultCookieName
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
}

// payload is the sealed content of the cookie; times are Unix seconds to keep it short.
type payload struct {
	UserID     int64  `json:"u"`
	Generation int64  `json:"g"`
	IssuedAt   int64  `json:"i"`
	LastSeen   int64  `json:"s"`
	CSRFToken  string `json:"c"`
}

// Issue starts a session for user, who must be able to sign in, and writes its cookie.
// Call it after the user has proved who they are; it also replaces any session the
// browser had, so a token planted before sign-in does not survive it.
func (m *Manager) Issue(w http.ResponseWriter, user persistence.User) (*Session, error) {
	now := m.now().Truncate(time.Second)
	if user.ID == 0 || !user.CanSignIn(now) {
		return nil, fmt.Errorf("issue session for user %d: the user cannot sign in", user.ID)
	}
	var tok [32]byte
	rand.Read(tok[:]) // never fails; crypto/rand aborts the program instead
	s := &Session{
		UserID: user.ID, Generation: user.Generation, IssuedAt: now, LastSeen: now,
		CSRFToken: base64.RawURLEncoding.EncodeToString(tok[:]), User: user,
	}
	if err := m.write(w, s); err != nil {
		return nil, fmt.Errorf("issue session for user %d: %w", user.ID, err)
	}
	return s, nil
}

// Load opens the request's session cookie and checks it: lifetimes first, then the
// user (exists, can sign in, same generation). Every refusal is ErrNoSession; only a
// store failure other than a missing user is returned as itself, because it says
// nothing about the session and must not send the user to sign in again.
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
	if p.UserID == 0 || p.CSRFToken == "" || seen.Before(issued) ||
		now.Sub(issued) >= m.absolute || now.Sub(seen) >= m.idle {
		return nil, ErrNoSession
	}
	u, err := m.users.GetUser(r.Context(), p.UserID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	if !u.CanSignIn(now) || u.Generation != p.Generation {
		return nil, ErrNoSession
	}
	return &Session{
		UserID: p.UserID, Generation: p.Generation, IssuedAt: issued, LastSeen: seen,
		CSRFToken: p.CSRFToken, User: u,
	}, nil
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
		UserID: s.UserID, Generation: s.Generation, IssuedAt: s.IssuedAt.Unix(),
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
	return &http.Cookie{
		Name: m.name, Value: value, Path: "/ui",
		HttpOnly: true, Secure: m.secure, SameSite: http.SameSiteLaxMode,
	}
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
