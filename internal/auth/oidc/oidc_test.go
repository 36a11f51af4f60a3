package oidc_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/auth/oidc"
	"wharf/internal/auth/oidc/oidctest"
	"wharf/internal/persistence"
)

type providers []persistence.IdentityProvider

func (p providers) ListIdentityProviders(context.Context) ([]persistence.IdentityProvider, error) {
	return p, nil
}

func (p providers) GetIdentityProvider(_ context.Context, name string) (persistence.IdentityProvider, error) {
	for _, r := range p {
		if r.Name == name {
			return r, nil
		}
	}
	return persistence.IdentityProvider{}, persistence.ErrNotFound
}

type plainSecrets struct{}

func (plainSecrets) Open(b []byte) ([]byte, error) { return append([]byte(nil), b...), nil }

func setup(t *testing.T, secret string) (*oidctest.Provider, persistence.IdentityProvider, *oidc.Manager) {
	t.Helper()
	fake := oidctest.New("wharf", secret)
	t.Cleanup(fake.Close)
	rec := persistence.IdentityProvider{Name: "corp", IssuerURL: fake.Issuer, ClientID: "wharf", SealedSecret: []byte(secret),
		Scopes: "profile email", Enabled: true}
	m := oidc.New(oidc.Config{Store: providers{rec}, Secrets: plainSecrets{}})
	return fake, rec, m
}

const redirect = "https://wharf.example.com/ui/oidc/callback"

// authorize follows the flow's URL to the fake provider and returns the code and state
// it redirects back with.
func authorize(t *testing.T, f oidc.Flow) (code, state string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), redirect) {
		t.Fatalf("authorize answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), loc.Query().Get("state")
}

func TestSignInFlow(t *testing.T) {
	for _, secret := range []string{"client-secret", ""} {
		t.Run(fmt.Sprintf("secret=%q", secret), func(t *testing.T) {
			fake, rec, m := setup(t, secret)
			ctx := context.Background()
			for round := range 2 {
				if round == 1 {
					fake.Rotate() // the new key is fetched when a token names it
				}
				f, err := m.Begin(ctx, rec, redirect)
				if err != nil {
					t.Fatal(err)
				}
				code, state := authorize(t, f)
				if state != f.State {
					t.Fatalf("state came back as %q, want %q", state, f.State)
				}
				id, err := m.Finish(ctx, rec, redirect, code, f)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if id.Issuer != fake.Issuer || id.Subject != "subject-1" || id.PreferredUsername != "alice" || id.Email != "alice@example.com" {
					t.Errorf("identity = %+v", id)
				}
			}
			if n := fake.Discoveries(); n != 1 {
				t.Errorf("%d discoveries, want 1 (cached)", n)
			}
		})
	}
}

func TestFinishRefuses(t *testing.T) {
	_, rec, m := setup(t, "client-secret")
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(*oidc.Flow, *persistence.IdentityProvider)
	}{
		{"wrong PKCE verifier", func(f *oidc.Flow, _ *persistence.IdentityProvider) { f.Verifier = strings.Repeat("x", 43) }},
		{"wrong nonce", func(f *oidc.Flow, _ *persistence.IdentityProvider) { f.Nonce = "another" }},
		{"wrong client secret", func(_ *oidc.Flow, r *persistence.IdentityProvider) { r.SealedSecret = []byte("guess") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := m.Begin(ctx, rec, redirect)
			if err != nil {
				t.Fatal(err)
			}
			code, _ := authorize(t, f)
			r := rec
			tc.change(&f, &r)
			if _, err := m.Finish(ctx, r, redirect, code, f); !errors.Is(err, oidc.ErrRejected) {
				t.Errorf("Finish = %v, want ErrRejected", err)
			}
		})
	}
}

func TestVerifyAccessToken(t *testing.T) {
	fake, rec, m := setup(t, "client-secret")
	ctx := context.Background()
	now := time.Now()
	good := map[string]any{"sub": "subject-1", "aud": "wharf"}
	with := func(k string, v any) map[string]any {
		c := map[string]any{"sub": "subject-1", "aud": "wharf"}
		c[k] = v
		return c
	}
	for _, tc := range []struct {
		name  string
		token string
		want  error
	}{
		{"valid", fake.Token(good), nil},
		{"wrong audience", fake.Token(with("aud", "someone-else")), oidc.ErrRejected},
		{"expired", fake.Token(with("exp", now.Add(-time.Minute).Unix())), oidc.ErrRejected},
		{"HS256 with the client secret", fake.TokenHS256(good, []byte("client-secret")), oidc.ErrRejected},
		{"alg none", noneToken(fake.Token(good)), oidc.ErrRejected},
		{"unknown issuer", fake.Token(with("iss", "https://evil.example.com")), oidc.ErrRejected},
		{"tampered", tamper(fake.Token(good)), oidc.ErrRejected},
		{"not a JWT", "wharf_abcdef", oidc.ErrNotJWT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, p, err := m.VerifyAccessToken(ctx, tc.token)
			if tc.want == nil {
				if err != nil || id.Subject != "subject-1" || id.Issuer != fake.Issuer || p.Name != rec.Name {
					t.Errorf("VerifyAccessToken = %+v, %s, %v", id, p.Name, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("VerifyAccessToken = %v, want %v", err, tc.want)
			}
		})
	}
	// A separate audience for access tokens replaces the client ID.
	rec.Audience = "wharf-api"
	m2 := oidc.New(oidc.Config{Store: providers{rec}, Secrets: plainSecrets{}})
	if _, _, err := m2.VerifyAccessToken(ctx, fake.Token(good)); !errors.Is(err, oidc.ErrRejected) {
		t.Errorf("client ID as audience where wharf-api is required: %v", err)
	}
	if _, _, err := m2.VerifyAccessToken(ctx, fake.Token(with("aud", "wharf-api"))); err != nil {
		t.Errorf("token for wharf-api: %v", err)
	}
	// A disabled provider's tokens are not accepted.
	rec.Enabled = false
	m3 := oidc.New(oidc.Config{Store: providers{rec}, Secrets: plainSecrets{}})
	if _, _, err := m3.VerifyAccessToken(ctx, fake.Token(with("aud", "wharf-api"))); !errors.Is(err, oidc.ErrRejected) {
		t.Errorf("token of a disabled provider: %v", err)
	}
}

func noneToken(tok string) string {
	parts := strings.Split(tok, ".")
	return "eyJhbGciOiJub25lIn0." + parts[1] + "."
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), "subject-1", "subject-2", 1))
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}

// TestUnreachableProvider: a provider that does not answer fails its own uses with
// ErrUnavailable, is asked again only after RetryAfter, and works once it answers.
func TestUnreachableProvider(t *testing.T) {
	var mu sync.Mutex
	down, hits := true, 0
	fake := oidctest.New("wharf", "")
	defer fake.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		d := down
		mu.Unlock()
		if d {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		fake.Server.Config.Handler.ServeHTTP(w, r)
	}))
	defer front.Close()
	rec := persistence.IdentityProvider{Name: "corp", IssuerURL: fake.Issuer, ClientID: "wharf", Enabled: true}
	clock := time.Now()
	m := oidc.New(oidc.Config{Store: providers{rec}, Secrets: plainSecrets{}, RetryAfter: time.Minute,
		Now:        func() time.Time { return clock },
		HTTPClient: &http.Client{Transport: redirectTo(fake.Issuer, front.URL)}})
	ctx := context.Background()
	for range 3 {
		if _, err := m.Begin(ctx, rec, redirect); !errors.Is(err, oidc.ErrUnavailable) {
			t.Fatalf("Begin = %v, want ErrUnavailable", err)
		}
	}
	mu.Lock()
	n := hits
	mu.Unlock()
	if n != 1 {
		t.Errorf("%d discovery requests within RetryAfter, want 1", n)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	clock = clock.Add(2 * time.Minute)
	if _, err := m.Begin(ctx, rec, redirect); err != nil {
		t.Fatalf("Begin after the provider came back: %v", err)
	}
}

// redirectTo sends requests for from's host to to's.
type rewrite struct{ from, to *url.URL }

func redirectTo(from, to string) http.RoundTripper {
	f, _ := url.Parse(from)
	tt, _ := url.Parse(to)
	return rewrite{f, tt}
}

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == rw.from.Host {
		r = r.Clone(r.Context())
		r.URL.Host = rw.to.Host
	}
	return http.DefaultTransport.RoundTrip(r)
}
