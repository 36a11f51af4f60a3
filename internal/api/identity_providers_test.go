package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/auth/oidc"
	"wharf/internal/auth/oidc/oidctest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// setupOIDC is setup with identity providers' access tokens accepted.
func setupOIDC(t *testing.T, store persistence.Store) *bundle {
	t.Helper()
	b := setup(t, store)
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(b.logs, testWriter{t}), nil))
	s := New(Deps{
		Store: store, Payloads: dirPayloads{}, Ops: b.ops, Sealer: b.sealer, Logger: logger, Version: "test",
		Ingest: &testIngester{store: store, dir: filepath.Join(b.dir, "blobs")},
		OIDC:   oidc.New(oidc.Config{Store: store, Secrets: b.sealer}),
	})
	b.srv.Close()
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	return b
}

func TestIdentityProvidersCRUD(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		b := setupOIDC(t, s)
		const canary = "client-secret-canary-5d1f"
		r := b.do("POST", "/api/v1/identity-providers", `{"name":"corp","display_name":"Corp SSO",
			"issuer_url":"https://login.example.com","client_id":"wharf","client_secret":"`+canary+`","scopes":"profile email"}`)
		if r.status != http.StatusCreated || r.header.Get("Location") != "/api/v1/identity-providers/corp" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		var v providerView
		r.json(t, &v)
		if !v.HasClientSecret || !v.Enabled || v.DisplayName != "Corp SSO" {
			t.Errorf("created %+v", v)
		}
		for _, tc := range []struct {
			method, path, body string
			status             int
			field              string
		}{
			{"POST", "/api/v1/identity-providers", `{"name":"plain","issuer_url":"http://login.example.com","client_id":"x"}`, 400, "issuer_url"},
			{"POST", "/api/v1/identity-providers", `{"name":"Bad","issuer_url":"https://a.example.com","client_id":"x"}`, 400, "name"},
			{"POST", "/api/v1/identity-providers", `{"name":"nocid","issuer_url":"https://a.example.com"}`, 400, "client_id"},
			{"POST", "/api/v1/identity-providers", `{"name":"corp","issuer_url":"https://b.example.com","client_id":"x"}`, 409, ""},
			{"POST", "/api/v1/identity-providers", `{"name":"corp2","issuer_url":"https://login.example.com","client_id":"x"}`, 409, ""},
			{"PUT", "/api/v1/identity-providers/corp", `{"name":"other","issuer_url":"https://login.example.com","client_id":"x"}`, 400, "name"},
			{"PUT", "/api/v1/identity-providers/none", `{"issuer_url":"https://login.example.com","client_id":"x"}`, 404, ""},
			{"GET", "/api/v1/identity-providers/none", ``, 404, ""},
			{"DELETE", "/api/v1/identity-providers/none", ``, 404, ""},
		} {
			r := b.do(tc.method, tc.path, tc.body)
			if r.status != tc.status {
				t.Errorf("%s %s %s = %d %s, want %d", tc.method, tc.path, tc.body, r.status, r.body, tc.status)
				continue
			}
			if tc.field != "" {
				if e := r.errorOf(t); e.Details[tc.field] == nil {
					t.Errorf("%s %s: details %v lack %s", tc.method, tc.path, e.Details, tc.field)
				}
			}
		}
		// Left out, the secret stays; the PUT disables the provider.
		r = b.do("PUT", "/api/v1/identity-providers/corp", `{"issuer_url":"https://login.example.com","client_id":"wharf-2","enabled":false}`)
		r.json(t, &v)
		if r.status != 200 || !v.HasClientSecret || v.Enabled || v.ClientID != "wharf-2" {
			t.Errorf("update = %d %s", r.status, r.body)
		}
		r = b.do("GET", "/api/v1/identity-providers", "")
		if r.status != 200 || !strings.Contains(string(r.body), `"total":1`) {
			t.Errorf("list = %d %s", r.status, r.body)
		}
		if r := b.do("DELETE", "/api/v1/identity-providers/corp", ""); r.status != http.StatusNoContent {
			t.Errorf("delete = %d %s", r.status, r.body)
		}
		// The secret is in no response, log line or audit event.
		events, _, err := s.ListAudit(context.Background(), persistence.AuditFilter{Kind: "identity_provider"})
		if err != nil || len(events) != 3 {
			t.Fatalf("audit events = %d, %v", len(events), err)
		}
		for _, e := range events {
			if e.Actor != "token:tester" || strings.Contains(string(audit.ChangesJSON(e.Changes)), canary) {
				t.Errorf("audit event %s by %s: %s", e.Action, e.Actor, audit.ChangesJSON(e.Changes))
			}
		}
		if strings.Contains(b.logs.String(), canary) {
			t.Error("the client secret is in the log")
		}
	})
}

// TestBearerAccessTokens: a provider's access token signs a linked user in; a wrong
// audience, an expired token and one signed with HS256 are refused with 401.
func TestBearerAccessTokens(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		fake := oidctest.New("wharf", "secret")
		defer fake.Close()
		b := setupOIDC(t, s)
		ctx := context.Background()
		if r := b.do("POST", "/api/v1/identity-providers", `{"name":"corp","issuer_url":"`+fake.Issuer+`","client_id":"wharf","client_secret":"secret"}`); r.status != 201 {
			t.Fatalf("create provider = %d %s", r.status, r.body)
		}
		for _, u := range []persistence.User{
			{Name: "sso.op", Role: persistence.RoleOperator, OIDCIssuer: fake.Issuer, OIDCSubject: "op"},
			{Name: "sso.admin", Role: persistence.RoleAdmin, OIDCIssuer: fake.Issuer, OIDCSubject: "admin"},
			{Name: "sso.off", Role: persistence.RoleAdmin, OIDCIssuer: fake.Issuer, OIDCSubject: "off", Disabled: true},
		} {
			if _, err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		claims := func(sub string, extra ...any) map[string]any {
			c := map[string]any{"sub": sub, "aud": "wharf"}
			for i := 0; i+1 < len(extra); i += 2 {
				c[extra[i].(string)] = extra[i+1]
			}
			return c
		}
		for _, tc := range []struct {
			name   string
			token  string
			status int
		}{
			{"valid", fake.Token(claims("op")), 200},
			{"wrong audience", fake.Token(claims("op", "aud", "another-client")), 401},
			{"expired", fake.Token(claims("op", "exp", time.Now().Add(-time.Minute).Unix())), 401},
			{"HS256", fake.TokenHS256(claims("op"), []byte("secret")), 401},
			{"unknown subject", fake.Token(claims("nobody")), 401},
			{"disabled user", fake.Token(claims("off")), 401},
		} {
			r := b.do("GET", "/api/v1/identity-providers", "", withToken(tc.token))
			if r.status != tc.status {
				t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.status)
			}
			if tc.status == 401 && r.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%s: no WWW-Authenticate", tc.name)
			}
		}
		// Changes are the user's; an operator may not manage providers, an administrator may.
		body := `{"issuer_url":"` + fake.Issuer + `","client_id":"wharf","display_name":"Corp"}`
		if r := b.do("PUT", "/api/v1/identity-providers/corp", body, withToken(fake.Token(claims("op")))); r.status != 403 {
			t.Errorf("operator's update = %d %s, want 403", r.status, r.body)
		}
		if r := b.do("PUT", "/api/v1/identity-providers/corp", body, withToken(fake.Token(claims("admin")))); r.status != 200 {
			t.Errorf("administrator's update = %d %s", r.status, r.body)
		}
		events, _, err := s.ListAudit(ctx, persistence.AuditFilter{Kind: "identity_provider", Action: "update"})
		if err != nil || len(events) != 1 || events[0].Actor != "user:sso.admin" {
			t.Errorf("update events = %+v, %v; want one by user:sso.admin", events, err)
		}
		// Keys rotate: a token signed with the new key verifies.
		fake.Rotate()
		if r := b.do("GET", "/api/v1/health", "", withToken(fake.Token(claims("op")))); r.status != 200 {
			t.Errorf("after rotation: %d %s", r.status, r.body)
		}
		// API tokens still work beside access tokens.
		if r := b.do("GET", "/api/v1/identity-providers/corp", ""); r.status != 200 {
			t.Errorf("API token: %d %s", r.status, r.body)
		}
	})
}
