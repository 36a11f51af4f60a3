package ui

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/product"
)

var currentRE = regexp.MustCompile(`<a class="sidenav-link" href="([^"]+)" aria-current="page">`)

// TestLayout: the navigation marks the page shown (and its parent for a record's page),
// offers administrators the token and identity provider pages, the theme button names
// the theme it switches to and the footer shows the version.
func TestLayout(t *testing.T) {
	ab := setupAccounts(t, withOIDC)
	ab.seedRouting(t)
	for _, tc := range []struct{ path, current string }{
		{"/ui/", "/ui/"},
		{"/ui/partners", "/ui/partners"},
		{"/ui/partners/acme", "/ui/partners"},
		{"/ui/tokens", "/ui/tokens"},
		{"/ui/identity-providers", "/ui/identity-providers"},
		{"/ui/messages", "/ui/messages"},
	} {
		body := ab.get(t, tc.path, http.StatusOK)
		marked := currentRE.FindAllStringSubmatch(body, -1)
		if len(marked) != 1 || marked[0][1] != tc.current {
			t.Errorf("GET %s marks %v, want only %s", tc.path, marked, tc.current)
		}
	}
	body := ab.get(t, "/ui/", http.StatusOK)
	for _, want := range []string{
		`href="/ui/tokens">API tokens</a>`, `href="/ui/identity-providers">Identity providers</a>`,
		`data-theme-toggle>Switch to dark theme</button>`,
		`<footer class="footer"><p>Wharf ` + product.Version() + `</p></footer>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}

	op, _, _ := ab.signedIn(t, "olga", persistence.RoleOperator)
	r := op.get(t, "/ui/")
	if r.status != http.StatusOK || strings.Contains(r.body, `href="/ui/tokens"`) || strings.Contains(r.body, `href="/ui/identity-providers"`) ||
		strings.Contains(r.body, `href="/ui/users"`) {
		t.Errorf("an operator's navigation offers the administrators' pages\n%s", r.body)
	}
}
