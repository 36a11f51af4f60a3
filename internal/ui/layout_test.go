package ui

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/product"
	"wharf/internal/records"
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
		`data-theme-toggle><span><span class="theme-toggle-verb">Switch to </span><span data-theme-name>dark</span> theme</span></button>`,
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

// TestDeleteButtonsNameWhatTheyDelete: a screen reader hears "Delete route outbox (local →
// acme) → inbox", not a row of "Delete"; no template has a bare Delete or Revoke button.
func TestDeleteButtonsNameWhatTheyDelete(t *testing.T) {
	pb := setupPages(t)
	pb.seedRouting(t)
	if _, err := records.CreateRoute(context.Background(), pb.store, records.RouteInput{Source: "outbox", From: "local", To: "acme", Target: "inbox"}); err != nil {
		t.Fatal(err)
	}
	body := pb.get(t, "/ui/routes", http.StatusOK)
	if want := `Delete<span class="visually-hidden"> route outbox (local → acme) → inbox</span></button>`; !strings.Contains(body, want) {
		t.Errorf("routes page lacks %q\n%s", want, body)
	}
	if body := pb.get(t, "/ui/partners/acme", http.StatusOK); !strings.Contains(body, `Delete<span class="visually-hidden"> partner acme</span>`) {
		t.Errorf("partner page's delete button names nothing\n%s", body)
	}
	eachTemplate(t, func(name, text string) {
		for _, bare := range []string{">Delete</button>", ">Revoke</button>", ">Remove</button>"} {
			if strings.Contains(text, bare) {
				t.Errorf("%s has a button %q that does not say what it deletes", name, bare)
			}
		}
	})
}
