package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"wharf/internal/api"
	"wharf/internal/auth/apitoken"
	"wharf/internal/persistence"
)

var apiTokenRE = regexp.MustCompile(`id="api-token">(wharf_[A-Za-z0-9_-]{43})</code>`)

// restStatus is the status of GET /api/v1/settings on rest with token as the bearer.
func restStatus(t *testing.T, rest *httptest.Server, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rest.URL+"/api/v1/settings", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestTokensCreateRevoke(t *testing.T) {
	ab := setupAccounts(t, nil)
	rest := httptest.NewServer(api.New(api.Deps{Store: ab.store}).Handler())
	t.Cleanup(rest.Close)

	if body := ab.get(t, "/ui/tokens", http.StatusOK); !strings.Contains(body, "No API tokens.") || !strings.Contains(body, `action="/ui/tokens"`) {
		t.Fatalf("empty tokens page:\n%s", body)
	}
	r := ab.post(t, "/ui/tokens", url.Values{"name": {"erp-export"}})
	if r.status != http.StatusOK {
		t.Fatalf("create = %d\n%s", r.status, r.body)
	}
	token := match(t, apiTokenRE, r.body)
	from := len(ab.c.seen)
	toks, err := ab.store.ListAPITokens(context.Background())
	if err != nil || len(toks) != 1 || toks[0].Name != "erp-export" || toks[0].Hash != apitoken.Hash(token) {
		t.Fatalf("stored tokens = %+v, %v", toks, err)
	}
	if got := restStatus(t, rest, token); got != http.StatusOK {
		t.Errorf("REST with the new token = %d, want 200", got)
	}

	for _, tt := range []struct{ name, want string }{
		{"erp-export", "already exists"},
		{"Not A Name", "Use 1 to 64"},
		{"", "Use 1 to 64"},
	} {
		r := ab.post(t, "/ui/tokens", url.Values{"name": {tt.name}})
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, tt.want) || !strings.Contains(r.body, `id="token_name-error"`) {
			t.Errorf("create %q = %d, want 422 with %q\n%s", tt.name, r.status, tt.want, r.body)
		}
	}

	list := ab.get(t, "/ui/tokens", http.StatusOK)
	if !strings.Contains(list, "erp-export") || !strings.Contains(list, `data-confirm="Revoke token erp-export?`) {
		t.Errorf("list after create:\n%s", list)
	}
	wantRedirect(t, ab.post(t, "/ui/tokens/erp-export/revoke", nil), "/ui/tokens")
	if body := ab.get(t, "/ui/tokens", http.StatusOK); !strings.Contains(body, "Token revoked") || !strings.Contains(body, "revoked</span>") {
		t.Errorf("list after revoke:\n%s", body)
	}
	if got := restStatus(t, rest, token); got != http.StatusUnauthorized {
		t.Errorf("REST with the revoked token = %d, want 401", got)
	}
	if r := ab.post(t, "/ui/tokens/no-such-token/revoke", nil); r.status != http.StatusNotFound {
		t.Errorf("revoke unknown = %d, want 404", r.status)
	}
	noneContains(t, ab.c, from, "creation", token)
}

// TestTokensOperator shows an operator the list but no way to create or revoke.
func TestTokensOperator(t *testing.T) {
	ab := setupAccounts(t, nil)
	if _, _, err := apitoken.Create(context.Background(), ab.store, "ci", ""); err != nil {
		t.Fatal(err)
	}
	op, csrf, _ := ab.signedIn(t, "olga", persistence.RoleOperator)
	list := op.get(t, "/ui/tokens")
	if list.status != http.StatusOK || !strings.Contains(list.body, "ci") || strings.Contains(list.body, `action="/ui/tokens"`) ||
		strings.Contains(list.body, "/revoke") {
		t.Errorf("operator's tokens page = %d\n%s", list.status, list.body)
	}
	for _, path := range []string{"/ui/tokens", "/ui/tokens/ci/revoke"} {
		if r := op.post(t, path, url.Values{"csrf_token": {csrf}, "name": {"sneaky"}}); r.status != http.StatusForbidden {
			t.Errorf("operator POST %s = %d, want 403", path, r.status)
		}
	}
	toks, _ := ab.store.ListAPITokens(context.Background())
	if len(toks) != 1 || toks[0].RevokedAt != nil {
		t.Errorf("tokens after the operator's attempts = %+v", toks)
	}
}

// TestTokensScopedToATarget creates a token scoped to a target instance from the form's
// select, shows the scope in the list, and refuses an instance that is not a target.
func TestTokensScopedToATarget(t *testing.T) {
	ab := setupAccounts(t, nil)
	ctx := context.Background()
	ab.posterAndPoller(t)
	page := ab.get(t, "/ui/tokens", http.StatusOK)
	if !strings.Contains(page, `<option value="erp_poster">`) || strings.Contains(page, `<option value="inbox_poller"`) ||
		!strings.Contains(page, `<label for="token_target">Scope</label>`) {
		t.Fatalf("the form does not offer exactly the target instances:\n%s", page)
	}
	r := ab.post(t, "/ui/tokens", url.Values{"name": {"erp-done"}, "target": {"erp_poster"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "only complete and fail deliveries of") {
		t.Fatalf("create scoped = %d\n%s", r.status, r.body)
	}
	toks, err := ab.store.ListAPITokens(ctx)
	if err != nil || len(toks) != 1 || toks[0].Target != "erp_poster" {
		t.Fatalf("stored tokens = %+v, %v", toks, err)
	}
	if list := ab.get(t, "/ui/tokens", http.StatusOK); !strings.Contains(list, `completes deliveries of <span class="mono">erp_poster</span>`) {
		t.Errorf("the list does not show the scope:\n%s", list)
	}
	for _, target := range []string{"inbox_poller", "no_such", "Bad Name"} {
		r := ab.post(t, "/ui/tokens", url.Values{"name": {"other"}, "target": {target}})
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="token_target-error"`) {
			t.Errorf("create scoped to %q = %d, want 422 naming the scope\n%s", target, r.status, r.body)
		}
	}
}
