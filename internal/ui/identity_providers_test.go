package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/auth/oidc"
	"wharf/internal/auth/oidc/oidctest"
	"wharf/internal/persistence"
	"wharf/internal/records"
)

// withOIDC gives the server a provider manager over its store and sealer.
func withOIDC(d *Deps) { d.OIDC = oidc.New(oidc.Config{Store: d.Store, Secrets: d.Sealer}) }

func TestIdentityProviderPages(t *testing.T) {
	ab := setupAccounts(t, withOIDC)
	const canary = "client-secret-canary-77e2"
	from := len(ab.c.seen)

	body := ab.get(t, "/ui/users", http.StatusOK)
	if !strings.Contains(body, `href="/ui/identity-providers"`) {
		t.Error("the users page does not link the identity providers")
	}
	body = ab.get(t, "/ui/identity-providers", http.StatusOK)
	if !strings.Contains(body, ab.srv.URL+"/ui/oidc/callback") {
		t.Error("the list does not show the redirect URL")
	}
	ab.get(t, "/ui/identity-providers/new", http.StatusOK)

	// A refused form keeps what was typed, but not the secret, and names the fields.
	form := url.Values{"name": {"corp"}, "display_name": {"Corp SSO"}, "issuer_url": {"http://login.example.com"},
		"client_id": {""}, "client_secret": {canary}, "scopes": {"profile email"}, "enabled": {"true"}}
	r := ab.post(t, "/ui/identity-providers", form)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="issuer_url-error"`) ||
		!strings.Contains(r.body, `id="client_id-error"`) || !strings.Contains(r.body, `value="Corp SSO"`) {
		t.Fatalf("refused form = %d\n%s", r.status, r.body)
	}

	form.Set("issuer_url", "https://login.example.com")
	form.Set("client_id", "wharf")
	wantRedirect(t, ab.post(t, "/ui/identity-providers", form), "/ui/identity-providers/corp")
	body = ab.get(t, "/ui/identity-providers/corp", http.StatusOK)
	if !strings.Contains(body, "Set (write-only)") || !strings.Contains(body, "Sign in with Corp SSO") {
		t.Errorf("provider page:\n%s", body)
	}
	if r := ab.post(t, "/ui/identity-providers", form); r.status != http.StatusUnprocessableEntity {
		t.Errorf("same name again = %d", r.status)
	}

	// Editing without a secret keeps it; the edit form never shows it.
	body = ab.get(t, "/ui/identity-providers/corp/edit", http.StatusOK)
	if !strings.Contains(body, "Remove the stored secret") {
		t.Error("the edit form offers no way to remove the secret")
	}
	edit := url.Values{"display_name": {"Corp"}, "issuer_url": {"https://login.example.com"}, "client_id": {"wharf-2"},
		"scopes": {"profile"}}
	wantRedirect(t, ab.post(t, "/ui/identity-providers/corp", edit), "/ui/identity-providers/corp")
	p, err := ab.store.GetIdentityProvider(context.Background(), "corp")
	if err != nil || len(p.SealedSecret) == 0 || p.ClientID != "wharf-2" || p.Enabled {
		t.Errorf("after edit: %+v, %v; want the secret kept and the provider disabled", p, err)
	}

	for _, path := range []string{"/ui/identity-providers/none", "/ui/identity-providers/none/edit"} {
		ab.get(t, path, http.StatusNotFound)
	}
	if r := ab.post(t, "/ui/identity-providers/none", edit); r.status != http.StatusNotFound {
		t.Errorf("update of a missing provider = %d", r.status)
	}
	if r := ab.post(t, "/ui/identity-providers/none/delete", nil); r.status != http.StatusNotFound {
		t.Errorf("delete of a missing provider = %d", r.status)
	}
	body = ab.get(t, "/ui/identity-providers/corp", http.StatusOK)
	if !strings.Contains(body, `data-confirm="Delete identity provider corp?`) {
		t.Error("delete is not confirmed")
	}
	wantRedirect(t, ab.post(t, "/ui/identity-providers/corp/delete", nil), "/ui/identity-providers")
	noneContains(t, ab.c, from, "provider pages", canary)

	events, _, err := ab.store.ListAudit(context.Background(), persistence.AuditFilter{Kind: "identity_provider"})
	if err != nil || len(events) != 3 || events[2].Actor != "user:alice" {
		t.Errorf("audit events = %+v, %v", events, err)
	}
	for _, e := range events {
		if strings.Contains(string(audit.ChangesJSON(e.Changes)), canary) {
			t.Errorf("audit event %s holds the secret", e.Action)
		}
	}

	// Operators may not manage providers.
	op, csrf, _ := ab.signedIn(t, "olga", persistence.RoleOperator)
	if r := op.get(t, "/ui/identity-providers"); r.status != http.StatusForbidden {
		t.Errorf("operator's list = %d", r.status)
	}
	if r := op.post(t, "/ui/identity-providers", url.Values{"csrf_token": {csrf}, "name": {"x"}}); r.status != http.StatusForbidden {
		t.Errorf("operator's create = %d", r.status)
	}
}

// signInWith runs the browser's part of single sign-on: the button, the provider's
// authorize endpoint (which approves at once) and the callback.
func signInWith(t *testing.T, c *client, provider, next string) response {
	t.Helper()
	r := c.get(t, "/ui/oidc/start/"+provider+"?next="+url.QueryEscape(next))
	if r.status != http.StatusSeeOther {
		return r
	}
	res, err := c.http.Get(r.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cb, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorize = %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	return c.get(t, cb.RequestURI())
}

func TestSingleSignOn(t *testing.T) {
	ab := setupAccounts(t, withOIDC)
	ctx := context.Background()
	fake := oidctest.New("wharf", "s3cret")
	defer fake.Close()
	sec := "s3cret"
	if _, err := records.SaveIdentityProvider(ctx, ab.store, ab.ui.sealer, "", records.IdentityProviderInput{
		Name: "corp", DisplayName: "Corp", IssuerURL: fake.Issuer, ClientID: "wharf", ClientSecret: &sec, Scopes: "profile email"}); err != nil {
		t.Fatal(err)
	}

	c := ab.client(t)
	if r := c.get(t, "/ui/sign-in?next=/ui/messages"); !strings.Contains(r.body, `href="/ui/oidc/start/corp?next=%2fui%2fmessages"`) ||
		!strings.Contains(r.body, "Sign in with Corp") {
		t.Fatalf("sign-in page has no button:\n%s", r.body)
	}
	// The first sign-in creates an operator; alice is taken by a password user.
	wantRedirect(t, signInWith(t, c, "corp", "/ui/messages"), "/ui/messages")
	if r := c.get(t, "/ui/"); r.status != http.StatusOK {
		t.Fatalf("signed in? GET /ui/ = %d", r.status)
	}
	u, err := ab.store.GetUserByOIDC(ctx, fake.Issuer, "subject-1")
	if err != nil || u.Name != "alice-2" || u.Role != persistence.RoleOperator || u.LastSignInAt == nil {
		t.Fatalf("user = %+v, %v", u, err)
	}
	events, _, _ := ab.store.ListAudit(ctx, persistence.AuditFilter{Kind: "user", Action: "create", Actor: "oidc:corp"})
	if len(events) != 1 {
		t.Errorf("user creation events by oidc:corp = %d, want 1", len(events))
	}

	// A second sign-in, after the keys rotated, finds the same user.
	fake.Rotate()
	c2 := ab.client(t)
	wantRedirect(t, signInWith(t, c2, "corp", ""), "/ui/")
	if n, _, _ := ab.store.ListUsers(ctx, persistence.ListOptions{}); len(n) != 2 {
		t.Errorf("%d users, want 2 (alice and alice-2)", len(n))
	}

	// A state that is not this sign-in's, or no flow cookie, is refused.
	c3 := ab.client(t)
	r := c3.get(t, "/ui/oidc/start/corp")
	res, err := c3.http.Get(r.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cb, _ := url.Parse(res.Header.Get("Location"))
	q := cb.Query()
	q.Set("state", "forged")
	if r := c3.get(t, cb.Path+"?"+q.Encode()); r.status != http.StatusBadRequest {
		t.Errorf("forged state = %d", r.status)
	}
	if r := ab.client(t).get(t, cb.RequestURI()); r.status != http.StatusBadRequest {
		t.Errorf("callback without the flow cookie = %d", r.status)
	}
	if r := c3.get(t, "/ui/"); r.status != http.StatusSeeOther {
		t.Errorf("refused sign-in left a session: %d", r.status)
	}

	// A disabled user is refused.
	if err := ab.store.SetUserDisabled(ctx, u.ID, true); err != nil {
		t.Fatal(err)
	}
	if r := signInWith(t, ab.client(t), "corp", ""); r.status != http.StatusForbidden {
		t.Errorf("disabled user's sign-in = %d", r.status)
	}

	// Unknown and disabled providers have no start.
	if r := c.get(t, "/ui/oidc/start/none"); r.status != http.StatusNotFound {
		t.Errorf("unknown provider = %d", r.status)
	}
}

// TestUnreachableProviderKeepsPasswordSignIn: a provider that cannot be reached fails
// only its own button.
func TestUnreachableProviderKeepsPasswordSignIn(t *testing.T) {
	ab := setupAccounts(t, withOIDC)
	fake := oidctest.New("wharf", "")
	issuer := fake.Issuer
	fake.Close()
	if _, err := records.SaveIdentityProvider(context.Background(), ab.store, ab.ui.sealer, "", records.IdentityProviderInput{
		Name: "gone", IssuerURL: issuer, ClientID: "wharf"}); err != nil {
		t.Fatal(err)
	}
	c := ab.client(t)
	if r := c.get(t, "/ui/sign-in"); r.status != http.StatusOK || !strings.Contains(r.body, "Sign in with gone") {
		t.Fatalf("sign-in page = %d", r.status)
	}
	if r := c.get(t, "/ui/oidc/start/gone"); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "cannot be reached") {
		t.Errorf("start at an unreachable provider = %d\n%s", r.status, r.body)
	}
	ab.clock.Add(time.Minute) // a new TOTP step
	if r := c.signIn(t, "alice", testPassword, ab.code(t, ab.secret), ""); r.status != http.StatusSeeOther {
		t.Errorf("password sign-in = %d", r.status)
	}
}
