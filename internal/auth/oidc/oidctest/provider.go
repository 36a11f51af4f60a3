// Package oidctest is a fake OpenID Connect provider for tests: discovery, a key set whose
// keys rotate, an authorize endpoint that approves at once (redirecting back with a code),
// and a token endpoint that checks the PKCE verifier against the challenge and issues an
// ID token with the nonce.
package oidctest

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"
)

// Provider is a running fake provider. Set the exported identity fields before a sign-in
// to choose who the authorize endpoint approves.
type Provider struct {
	Server       *httptest.Server
	Issuer       string
	ClientID     string
	ClientSecret string // empty: a public client (no secret checked)

	mu                sync.Mutex
	subject           string
	preferredUsername string
	email             string
	name              string
	keys              []signingKey // the last one signs; all are published
	codes             map[string]grant
	discoveries       int
	tokenRequests     int
	now               func() time.Time
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

type grant struct {
	redirectURI string
	challenge   string
	nonce       string
	claims      map[string]any
}

// New starts a provider for clientID (and clientSecret, when not empty) on a loopback
// address; Close stops it.
func New(clientID, clientSecret string) *Provider {
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, codes: map[string]grant{}, now: time.Now,
		subject: "subject-1", preferredUsername: "alice", email: "alice@example.com", name: "Alice Example"}
	p.Rotate()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.Server = httptest.NewServer(mux)
	p.Issuer = p.Server.URL
	return p
}

// Close stops the server.
func (p *Provider) Close() { p.Server.Close() }

// SetUser chooses the identity the next authorizations approve.
func (p *Provider) SetUser(subject, preferredUsername, email, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subject, p.preferredUsername, p.email, p.name = subject, preferredUsername, email, name
}

// Rotate adds a new signing key; the previous one stays published, older ones are
// dropped.
func (p *Provider) Rotate() {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, signingKey{id: randomString(8), key: k})
	if len(p.keys) > 2 {
		p.keys = p.keys[len(p.keys)-2:]
	}
}

// Discoveries counts the requests for the discovery document.
func (p *Provider) Discoveries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.discoveries
}

// TokenRequests counts the requests to the token endpoint.
func (p *Provider) TokenRequests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokenRequests
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.discoveries++
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer,
		"authorization_endpoint":                p.Issuer + "/authorize",
		"token_endpoint":                        p.Issuer + "/token",
		"jwks_uri":                              p.Issuer + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]map[string]string, 0, len(p.keys))
	for _, k := range p.keys {
		keys = append(keys, map[string]string{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.id,
			"n": b64(k.key.N.Bytes()), "e": b64(big.NewInt(int64(k.key.E)).Bytes()),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// authorize approves at once: it checks the request's shape and redirects back with a
// code bound to the redirect URI, the PKCE challenge and the nonce.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("response_type") != "code" || q.Get("client_id") != p.ClientID:
		http.Error(w, "unknown client or response type", http.StatusBadRequest)
		return
	case err != nil || !redirect.IsAbs():
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE with S256 is required", http.StatusBadRequest)
		return
	}
	code := randomString(24)
	p.mu.Lock()
	p.codes[code] = grant{redirectURI: redirect.String(), challenge: q.Get("code_challenge"), nonce: q.Get("nonce"),
		claims: map[string]any{"sub": p.subject, "preferred_username": p.preferredUsername, "email": p.email, "name": p.name}}
	p.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.tokenRequests++
	p.mu.Unlock()
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || (p.ClientSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(p.ClientSecret)) != 1) {
		oauthError(w, "invalid_client")
		return
	}
	code := r.PostForm.Get("code")
	p.mu.Lock()
	g, ok := p.codes[code]
	delete(p.codes, code) // a code is redeemed once
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case r.PostForm.Get("grant_type") != "authorization_code" || !ok:
		oauthError(w, "invalid_grant")
		return
	case r.PostForm.Get("redirect_uri") != g.redirectURI:
		oauthError(w, "invalid_grant")
		return
	case subtle.ConstantTimeCompare([]byte(b64(sum[:])), []byte(g.challenge)) != 1:
		oauthError(w, "invalid_grant") // the PKCE verifier does not match the challenge
		return
	}
	claims := map[string]any{"aud": p.ClientID, "nonce": g.nonce}
	for k, v := range g.claims {
		claims[k] = v
	}
	access := map[string]any{"aud": p.ClientID, "sub": g.claims["sub"]}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": p.Token(access), "token_type": "Bearer", "expires_in": 300, "id_token": p.Token(claims),
	})
}

// Token signs claims with the current key (RS256), adding iss, iat and exp (five minutes)
// unless claims has them.
func (p *Provider) Token(claims map[string]any) string {
	p.mu.Lock()
	k := p.keys[len(p.keys)-1]
	now := p.now()
	p.mu.Unlock()
	c := p.withDefaults(claims, now)
	input := b64(mustJSON(map[string]string{"alg": "RS256", "kid": k.id, "typ": "JWT"})) + "." + b64(mustJSON(c))
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + b64(sig)
}

// TokenHS256 signs claims with HMAC-SHA256 under key, as a forger holding a shared secret
// would.
func (p *Provider) TokenHS256(claims map[string]any, key []byte) string {
	c := p.withDefaults(claims, p.now())
	input := b64(mustJSON(map[string]string{"alg": "HS256", "typ": "JWT"})) + "." + b64(mustJSON(c))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(input))
	return input + "." + b64(mac.Sum(nil))
}

func (p *Provider) withDefaults(claims map[string]any, now time.Time) map[string]any {
	c := map[string]any{"iss": p.Issuer, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	return c
}

func oauthError(w http.ResponseWriter, code string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b64(b)
}
