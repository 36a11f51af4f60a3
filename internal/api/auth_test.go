package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestAuthentication(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		revoked := b.newToken("old")
		if err := b.store.RevokeAPIToken(context.Background(), "old"); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name   string
			opts   []reqOpt
			status int
		}{
			{"valid token", nil, 200},
			{"no token", []reqOpt{withoutHeader("Authorization")}, 401},
			{"unknown token", []reqOpt{withToken("wharf_not-a-token")}, 401},
			{"revoked token", []reqOpt{withToken(revoked)}, 401},
			{"basic scheme", []reqOpt{withHeader("Authorization", "Basic dXNlcjpwYXNz")}, 401},
			{"empty bearer", []reqOpt{withHeader("Authorization", "Bearer ")}, 401},
			{"token hash instead of token", []reqOpt{withToken(HashToken(b.token))}, 401},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for _, path := range []string{"/api/v1/health", "/api/v1/partners", "/api/v1/settings"} {
					r := b.do("GET", path, "", tt.opts...)
					if r.status != tt.status {
						t.Fatalf("GET %s = %d %s, want %d", path, r.status, r.body, tt.status)
					}
					if tt.status == 401 {
						if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
							t.Errorf("WWW-Authenticate = %q", got)
						}
						if e := r.errorOf(t); e.Code != "UNAUTHORIZED" {
							t.Errorf("code = %s", e.Code)
						}
					}
				}
			})
		}

		t.Run("a refused write writes nothing", func(t *testing.T) {
			r := b.do("POST", "/api/v1/partners", `{"name":"sneaky"}`, withoutHeader("Authorization"))
			if r.status != 401 {
				t.Fatalf("status %d", r.status)
			}
			b.must(404, "GET", "/api/v1/partners/sneaky", "")
		})

		t.Run("public routes", func(t *testing.T) {
			r := b.do("GET", "/healthz", "", withoutHeader("Authorization"))
			if r.status != 200 || string(r.body) != "ok\n" {
				t.Fatalf("/healthz = %d %q", r.status, r.body)
			}
			r = b.do("GET", "/api/v1/openapi.yaml", "", withoutHeader("Authorization"))
			if r.status != 200 || !strings.HasPrefix(string(r.body), "openapi: 3.1.0") {
				t.Fatalf("openapi.yaml = %d", r.status)
			}
		})

		t.Run("health", func(t *testing.T) {
			var h healthBody
			b.must(200, "GET", "/api/v1/health", "").json(t, &h)
			if h.Status != "ok" || h.Database != "ok" || h.Version != "test" || h.StartedAt.IsZero() {
				t.Errorf("health = %+v", h)
			}
		})

		t.Run("access log holds no token", func(t *testing.T) {
			r := b.must(200, "GET", "/api/v1/partners", "", withHeader("X-Request-Id", "trace-0123456789"))
			if got := r.header.Get("X-Request-Id"); got != "trace-0123456789" {
				t.Errorf("X-Request-Id = %q", got)
			}
			logs := b.logs.String()
			if strings.Contains(logs, b.token) || strings.Contains(logs, revoked) || strings.Contains(logs, "Bearer") {
				t.Error("a token reached the log")
			}
			if !strings.Contains(logs, "request_id=trace-0123456789") || !strings.Contains(logs, "actor=token:tester") {
				t.Errorf("access line missing request id or actor:\n%s", logs)
			}
		})

		t.Run("every response has a request id", func(t *testing.T) {
			a := b.do("GET", "/api/v1/partners", "")
			c := b.do("GET", "/api/v1/partners", "", withoutHeader("Authorization"))
			ida, idc := a.header.Get("X-Request-Id"), c.header.Get("X-Request-Id")
			if ida == "" || idc == "" || ida == idc {
				t.Errorf("request ids %q and %q", ida, idc)
			}
			if c.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no nosniff")
			}
		})
	})
}

func TestUnknownPaths(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		r := b.do("GET", "/api/v1/nothing-here", "")
		if r.status != 404 || r.errorOf(t).Code != "NOT_FOUND" {
			t.Errorf("unknown path = %d %s", r.status, r.body)
		}
		r = b.do("PATCH", "/api/v1/partners/acme", `{}`)
		if r.status != http.StatusMethodNotAllowed || r.errorOf(t).Code != "METHOD_NOT_ALLOWED" {
			t.Errorf("PATCH = %d %s", r.status, r.body)
		}
		if got := r.header.Get("Allow"); got != "GET, PUT, DELETE" {
			t.Errorf("Allow = %q", got)
		}
	})
}
