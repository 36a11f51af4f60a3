// Package oidc signs users in through OpenID Connect providers and verifies the access
// tokens (JWTs) those providers issue, for the web UI and the REST API. Providers are
// records (persistence.IdentityProvider); each is discovered lazily, with a timeout, and
// the result is cached: a provider that cannot be reached fails only its own sign-ins,
// and is tried again after a pause.
package oidc

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"wharf/internal/persistence"
)

// Algorithms are the signature algorithms accepted on ID and access tokens: asymmetric
// ones only. HS256 would let anyone holding the client secret mint tokens, and "none"
// is no signature at all.
var Algorithms = []string{
	gooidc.RS256, gooidc.RS384, gooidc.RS512,
	gooidc.ES256, gooidc.ES384, gooidc.ES512,
	gooidc.PS256, gooidc.PS384, gooidc.PS512,
	gooidc.EdDSA,
}

// Store is where the providers are read.
type Store interface {
	ListIdentityProviders(ctx context.Context) ([]persistence.IdentityProvider, error)
	GetIdentityProvider(ctx context.Context, name string) (persistence.IdentityProvider, error)
}

// Opener opens sealed client secrets.
type Opener interface {
	Open(sealed []byte) ([]byte, error)
}

// Config configures a Manager; zero durations take the defaults.
type Config struct {
	Store   Store
	Secrets Opener
	// HTTPClient talks to the providers; nil is a client with a 10 s timeout.
	HTTPClient *http.Client
	// Timeout bounds one discovery or code exchange (default 10 s).
	Timeout time.Duration
	// RetryAfter is how long a failed discovery is remembered before it is tried again
	// (default 30 s), so a provider that is down is not asked on every request.
	RetryAfter time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
}

// Manager holds the discovered providers.
type Manager struct {
	store   Store
	secrets Opener
	client  *http.Client
	timeout time.Duration
	retry   time.Duration
	now     func() time.Time
	log     *slog.Logger

	mu    sync.Mutex
	cache map[string]*discovery // by issuer URL
}

type discovery struct {
	provider *gooidc.Provider
	err      error
	at       time.Time
}

// New builds a Manager; it reaches no provider.
func New(c Config) *Manager {
	m := &Manager{store: c.Store, secrets: c.Secrets, client: c.HTTPClient, timeout: c.Timeout, retry: c.RetryAfter,
		now: c.Now, log: c.Logger, cache: map[string]*discovery{}}
	if m.timeout <= 0 {
		m.timeout = 10 * time.Second
	}
	if m.retry <= 0 {
		m.retry = 30 * time.Second
	}
	if m.client == nil {
		m.client = &http.Client{Timeout: m.timeout}
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m
}

// ErrUnavailable is a provider that could not be discovered (unreachable, or its
// discovery document is wrong); the wrapped error says why.
var ErrUnavailable = errors.New("identity provider unavailable")

// ErrRejected is a token or a sign-in answer that does not verify.
var ErrRejected = errors.New("rejected")

// discover returns the provider's discovery, from the cache when it is there: a success
// for good, a failure for RetryAfter.
func (m *Manager) discover(ctx context.Context, rec persistence.IdentityProvider) (*gooidc.Provider, error) {
	now := m.now()
	m.mu.Lock()
	d := m.cache[rec.IssuerURL]
	m.mu.Unlock()
	if d != nil && (d.err == nil || now.Sub(d.at) < m.retry) {
		return d.provider, d.err
	}
	// The provider keeps the client (not the context) for its key set requests.
	cctx, cancel := context.WithTimeout(gooidc.ClientContext(context.WithoutCancel(ctx), m.client), m.timeout)
	defer cancel()
	p, err := gooidc.NewProvider(cctx, rec.IssuerURL)
	if err != nil {
		err = fmt.Errorf("discover identity provider %s at %s: %w: %w", rec.Name, rec.IssuerURL, ErrUnavailable, err)
		m.log.WarnContext(ctx, "identity provider unavailable", "provider", rec.Name, "issuer", rec.IssuerURL, "err", err)
	}
	m.mu.Lock()
	m.cache[rec.IssuerURL] = &discovery{provider: p, err: err, at: now}
	m.mu.Unlock()
	return p, err
}

// Forget drops the cached discovery of issuer, so the next use discovers it again.
func (m *Manager) Forget(issuer string) {
	m.mu.Lock()
	delete(m.cache, issuer)
	m.mu.Unlock()
}

// Flow is a started sign-in: the provider's authorization URL to send the browser to,
// and the values the callback must see again (kept by the caller, sealed).
type Flow struct {
	URL      string
	State    string
	Nonce    string
	Verifier string
}

// Begin starts the authorization code flow with PKCE (S256) at the provider, returning
// to redirectURL.
func (m *Manager) Begin(ctx context.Context, rec persistence.IdentityProvider, redirectURL string) (Flow, error) {
	p, err := m.discover(ctx, rec)
	if err != nil {
		return Flow{}, err
	}
	f := Flow{State: randomString(), Nonce: randomString(), Verifier: oauth2.GenerateVerifier()}
	cfg := m.oauthConfig(rec, p, redirectURL, nil)
	f.URL = cfg.AuthCodeURL(f.State, gooidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return f, nil
}

// Identity is who a provider says signed in.
type Identity struct {
	Issuer            string
	Subject           string
	PreferredUsername string
	Email             string
	Name              string
}

// Finish redeems the authorization code with the PKCE verifier and verifies the ID
// token: signature, issuer, audience (the client ID), expiry and nonce.
func (m *Manager) Finish(ctx context.Context, rec persistence.IdentityProvider, redirectURL, code string, f Flow) (Identity, error) {
	p, err := m.discover(ctx, rec)
	if err != nil {
		return Identity{}, err
	}
	var secret []byte
	if len(rec.SealedSecret) > 0 {
		if secret, err = m.secrets.Open(rec.SealedSecret); err != nil {
			return Identity{}, fmt.Errorf("open client secret of identity provider %s: %w", rec.Name, err)
		}
		defer clear(secret)
	}
	cfg := m.oauthConfig(rec, p, redirectURL, secret)
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, m.client), m.timeout)
	defer cancel()
	tok, err := cfg.Exchange(cctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("redeem the code at identity provider %s: %w", rec.Name, exchangeError(err))
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, fmt.Errorf("identity provider %s answered without an ID token: %w", rec.Name, ErrRejected)
	}
	v := p.Verifier(&gooidc.Config{ClientID: rec.ClientID, SupportedSigningAlgs: Algorithms, Now: m.now})
	idt, err := v.Verify(cctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("ID token of identity provider %s: %w: %w", rec.Name, ErrRejected, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return Identity{}, fmt.Errorf("ID token of identity provider %s: %w: the nonce is not this sign-in's", rec.Name, ErrRejected)
	}
	return identityOf(idt)
}

// exchangeError keeps what the provider said of a refused code, without the response
// body, which could echo what was sent.
func exchangeError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := re.ErrorCode
		if msg == "" && re.Response != nil {
			msg = re.Response.Status
		}
		return fmt.Errorf("%w: %s", ErrRejected, msg)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

func identityOf(idt *gooidc.IDToken) (Identity, error) {
	var c struct {
		PreferredUsername string `json:"preferred_username"`
		Email             string `json:"email"`
		Name              string `json:"name"`
	}
	if err := idt.Claims(&c); err != nil {
		return Identity{}, fmt.Errorf("read claims: %w: %w", ErrRejected, err)
	}
	if idt.Subject == "" {
		return Identity{}, fmt.Errorf("%w: the token has no subject", ErrRejected)
	}
	return Identity{Issuer: idt.Issuer, Subject: idt.Subject, PreferredUsername: c.PreferredUsername, Email: c.Email, Name: c.Name}, nil
}

func (m *Manager) oauthConfig(rec persistence.IdentityProvider, p *gooidc.Provider, redirectURL string, secret []byte) *oauth2.Config {
	ep := p.Endpoint()
	if len(secret) == 0 {
		// A public client sends its ID in the form; PKCE protects the code.
		ep.AuthStyle = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{
		ClientID: rec.ClientID, ClientSecret: string(secret), Endpoint: ep, RedirectURL: redirectURL,
		Scopes: append([]string{gooidc.ScopeOpenID}, strings.Fields(rec.Scopes)...),
	}
}

// ErrNotJWT is a bearer token that is not a JWT (an API token, say).
var ErrNotJWT = errors.New("not a JWT")

// VerifyAccessToken verifies a bearer JWT from an enabled provider: the issuer names the
// provider, then signature (asymmetric algorithms only), issuer, audience (the
// provider's token audience) and expiry are checked.
func (m *Manager) VerifyAccessToken(ctx context.Context, raw string) (Identity, persistence.IdentityProvider, error) {
	iss, err := unverifiedIssuer(raw)
	if err != nil {
		return Identity{}, persistence.IdentityProvider{}, err
	}
	list, err := m.store.ListIdentityProviders(ctx)
	if err != nil {
		return Identity{}, persistence.IdentityProvider{}, err
	}
	var rec persistence.IdentityProvider
	for _, p := range list {
		if p.Enabled && p.IssuerURL == iss {
			rec = p
		}
	}
	if rec.Name == "" {
		return Identity{}, rec, fmt.Errorf("%w: no enabled identity provider has the token's issuer", ErrRejected)
	}
	p, err := m.discover(ctx, rec)
	if err != nil {
		return Identity{}, rec, err
	}
	v := p.Verifier(&gooidc.Config{ClientID: rec.TokenAudience(), SupportedSigningAlgs: Algorithms, Now: m.now})
	cctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	t, err := v.Verify(cctx, raw)
	if err != nil {
		return Identity{}, rec, fmt.Errorf("access token of identity provider %s: %w: %w", rec.Name, ErrRejected, err)
	}
	id, err := identityOf(t)
	return id, rec, err
}

// unverifiedIssuer reads the iss claim of a compact JWT without verifying it; it only
// picks the provider whose keys then verify the token.
func unverifiedIssuer(raw string) (string, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", ErrNotJWT
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", ErrNotJWT
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", ErrNotJWT
	}
	if c.Issuer == "" {
		return "", fmt.Errorf("%w: the token names no issuer", ErrRejected)
	}
	return c.Issuer, nil
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
