package browsertest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"wharf/internal/auth/oidc/oidctest"
)

// stepConfigureSSO registers a fake OpenID Connect provider in the identity provider
// form, reached from the users page.
func stepConfigureSSO(t *testing.T, b *browser) {
	b.sso = oidctest.New("wharf", "sso-client-secret")
	b.t.Cleanup(b.sso.Close)
	b.sso.SetUser("sso-subject-1", "carol", "carol@example.com", "Carol Example")
	b.open(t, "/ui/users")
	b.do(t, "open the identity providers", chromedp.Click(chromedp.CSS("a[href='/ui/identity-providers']")),
		chromedp.WaitVisible(chromedp.CSS("a[href='/ui/identity-providers/new']")))
	b.do(t, "open the new provider form", chromedp.Click(chromedp.CSS("a[href='/ui/identity-providers/new']")),
		chromedp.WaitVisible(chromedp.CSS("#issuer_url")))
	b.do(t, "fill in the provider",
		chromedp.SendKeys(chromedp.CSS("#name"), "corp"),
		chromedp.SendKeys(chromedp.CSS("#display_name"), "Corp SSO"),
		chromedp.SendKeys(chromedp.CSS("#issuer_url"), b.sso.Issuer),
		chromedp.SendKeys(chromedp.CSS("#client_id"), "wharf"),
		chromedp.SendKeys(chromedp.CSS("#client_secret"), "sso-client-secret"),
	)
	b.submit(t, "main form button[type=submit]", ".flash-success")
	if loc := b.location(t); loc != "/ui/identity-providers/corp" {
		t.Fatalf("after saving the provider the browser is at %s:\n%s", loc, b.mainText(t))
	}
	if text := b.mainText(t); !strings.Contains(text, "Set (write-only)") || strings.Contains(text, "sso-client-secret") {
		t.Errorf("the provider's page:\n%s", text)
	}
	b.shoot(t, "identity-provider", 1280)
}

// stepSingleSignOn signs in, signed out, with the "Sign in with …" button: the fake
// provider approves at once and sends the browser back, which lands signed in as the
// user the first sign-in creates.
func stepSingleSignOn(t *testing.T, b *browser) {
	b.open(t, "/ui/sign-in?next=/ui/messages")
	b.shoot(t, "sign-in-sso", 1280)
	b.submit(t, "a.sso-button", ".topbar")
	if loc := b.location(t); loc != "/ui/messages" {
		t.Errorf("after single sign-on the browser is at %s, want /ui/messages:\n%s", loc, b.mainText(t))
	}
	b.open(t, "/ui/account")
	if text := b.mainText(t); !strings.Contains(text, "carol") {
		t.Errorf("the account page after single sign-on:\n%s", text)
	}
	if n := b.sso.TokenRequests(); n != 1 {
		t.Errorf("the provider's token endpoint was asked %d times, want 1", n)
	}
	// The session is an ordinary one: signing out ends it.
	b.submit(t, "form[action='/ui/sign-out'] button[type=submit]", "main")
	b.open(t, "/ui/partners")
	if loc := b.location(t); !strings.HasPrefix(loc, "/ui/sign-in") {
		t.Errorf("after signing out, /ui/partners shows %s", loc)
	}
}

// ssoSignIn runs single sign-on with the script-less client: the button's link, the
// provider's authorize endpoint and the callback. The client is then signed in.
func (c *client) ssoSignIn(t *testing.T, provider string) {
	t.Helper()
	start := c.get(t, "/ui/oidc/start/"+provider)
	if start.status != http.StatusSeeOther {
		t.Fatalf("start single sign-on = %d\n%s", start.status, start.body)
	}
	resp, err := c.http.Get(start.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("the provider's authorize = %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if r := c.get(t, back.RequestURI()); r.status != http.StatusSeeOther {
		t.Fatalf("single sign-on callback = %d\n%s", r.status, r.body)
	}
	c.csrf = match(t, csrfRE, c.get(t, "/ui/").body)
}
