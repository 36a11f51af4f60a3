package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"
	"wharf/internal/ui/static"
)

// accountsBundle is a server with every page mounted and alice, an administrator, signed
// in; it keeps alice's TOTP secret and recovery codes.
type accountsBundle struct {
	*pagesBundle
	ui     *Server
	secret string
	codes  []string
}

// setupAccounts serves the UI (more sets further Deps) and signs alice in.
func setupAccounts(t *testing.T, more func(*Deps)) *accountsBundle {
	t.Helper()
	b := newBundle(t)
	acts := &countingActions{}
	s := newServer(t, b, func(d *Deps) {
		d.Actions = acts
		if more != nil {
			more(d)
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)

	ab := &accountsBundle{pagesBundle: &pagesBundle{bundle: b, actions: acts, c: b.client(t)}, ui: s}
	ab.secret, ab.codes = b.enroll(t, ab.c, "alice")
	if r := ab.c.signIn(t, "alice", testPassword, b.code(t, ab.secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d\n%s", r.status, r.body)
	}
	ab.csrf = match(t, csrfRE, ab.c.get(t, "/ui/").body)
	return ab
}

// signedIn enrols a further user with role and signs them in on a new client; it returns
// the client, its CSRF token and the user's TOTP secret.
func (b *bundle) signedIn(t *testing.T, name string, role persistence.UserRole) (*client, string, string) {
	t.Helper()
	c := b.client(t)
	secret, _ := b.enroll(t, c, name)
	if role != persistence.RoleAdmin {
		u, err := b.store.GetUserByName(context.Background(), persistence.UserName(name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.SetUserRole(context.Background(), u.ID, role); err != nil {
			t.Fatal(err)
		}
	}
	if r := c.signIn(t, name, testPassword, b.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in of %s = %d\n%s", name, r.status, r.body)
	}
	return c, match(t, csrfRE, c.get(t, "/ui/").body), secret
}

// signedOut reports whether c's session no longer opens a page.
func signedOut(t *testing.T, c *client) bool {
	t.Helper()
	r := c.get(t, "/ui/account")
	return r.status == http.StatusSeeOther && strings.HasPrefix(r.header.Get("Location"), session.SignInPath)
}

// noneContains fails when a body c saw from index from on contains a secret.
func noneContains(t *testing.T, c *client, from int, what string, secrets ...string) {
	t.Helper()
	for i, body := range c.seen[from:] {
		for _, s := range secrets {
			if s != "" && strings.Contains(body, s) {
				t.Errorf("response %d after the %s contains a secret %q", from+i, what, s)
			}
		}
	}
}

func TestAccountPage(t *testing.T) {
	ab := setupAccounts(t, nil)
	body := ab.get(t, "/ui/account", http.StatusOK)
	for _, want := range []string{`action="/ui/account/password"`, `href="/ui/account/authenticator"`,
		`action="/ui/account/recovery-codes"`, `action="/ui/account/sign-out-everywhere"`, `href="/ui/tokens"`,
		"10 of 10 recovery codes left", "Administrator"} {
		if !strings.Contains(body, want) {
			t.Errorf("account page lacks %q", want)
		}
	}
}

const newPassword = "lantern orchard drifts north"

func TestAccountChangePassword(t *testing.T) {
	ab := setupAccounts(t, nil)
	ctx := context.Background()
	other := ab.client(t)
	ab.clock.Add(30 * time.Second)
	if r := other.signIn(t, "alice", testPassword, ab.code(t, ab.secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("second sign-in = %d", r.status)
	}
	before, err := ab.store.GetUserByName(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name             string
		current, pw, pw2 string
		status           int
		want             string
	}{
		{"wrong current password", "not my password at all", newPassword, newPassword, http.StatusUnprocessableEntity, "The current password is not right."},
		{"weak", testPassword, "short", "short", http.StatusUnprocessableEntity, "Password is too short"},
		{"not the same", testPassword, newPassword, newPassword + "x", http.StatusUnprocessableEntity, "The two passwords are not the same."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ab.post(t, "/ui/account/password", url.Values{"current_password": {tt.current}, "password": {tt.pw}, "password_confirm": {tt.pw2}})
			if r.status != tt.status || !strings.Contains(r.body, tt.want) {
				t.Fatalf("POST = %d, want %d with %q\n%s", r.status, tt.status, tt.want, r.body)
			}
			for _, pw := range []string{tt.current, tt.pw, tt.pw2} {
				if strings.Contains(r.body, `value="`+pw+`"`) {
					t.Errorf("refused form shows a password")
				}
			}
		})
	}
	if u, _ := ab.store.GetUserByName(ctx, "alice"); u.PasswordHash != before.PasswordHash || u.Generation != before.Generation {
		t.Fatal("a refused change changed the user")
	}

	wantRedirect(t, ab.post(t, "/ui/account/password", url.Values{"current_password": {testPassword},
		"password": {newPassword}, "password_confirm": {newPassword}}), "/ui/account")
	if body := ab.get(t, "/ui/account", http.StatusOK); !strings.Contains(body, "Password changed.") {
		t.Errorf("no flash after the change:\n%s", body)
	}
	if !signedOut(t, other) {
		t.Error("the other session survived the password change")
	}
	// The old CSRF token went with the old session; the page carries the new one.
	ab.csrf = match(t, csrfRE, ab.get(t, "/ui/account", http.StatusOK))

	ab.clock.Add(time.Hour)
	if r := ab.client(t).signIn(t, "alice", testPassword, ab.code(t, ab.secret), ""); r.status != http.StatusUnprocessableEntity {
		t.Errorf("sign-in with the old password = %d, want 422", r.status)
	}
	ab.clock.Add(time.Hour)
	if r := ab.client(t).signIn(t, "alice", newPassword, ab.code(t, ab.secret), ""); r.status != http.StatusSeeOther {
		t.Errorf("sign-in with the new password = %d, want 303", r.status)
	}
	noneContains(t, ab.c, 0, "change", newPassword, testPassword)
}

// TestAccountPasswordThrottled slows down guessing the current password from a session.
func TestAccountPasswordThrottled(t *testing.T) {
	ab := setupAccounts(t, nil)
	var last response
	for range 5 {
		last = ab.post(t, "/ui/account/recovery-codes", url.Values{"current_password": {"a wrong guess here"}})
	}
	if last.status != http.StatusTooManyRequests || last.header.Get("Retry-After") == "" {
		t.Errorf("fifth wrong password = %d, Retry-After %q; want 429", last.status, last.header.Get("Retry-After"))
	}
}

var qrRE = regexp.MustCompile(`<div class="qr-code"><svg [^>]*viewBox="0 0 (\d+) (\d+)"`)

func TestAccountReplaceAuthenticator(t *testing.T) {
	ab := setupAccounts(t, nil)
	ctx := context.Background()
	other := ab.client(t)
	ab.clock.Add(30 * time.Second)
	if r := other.signIn(t, "alice", testPassword, ab.code(t, ab.secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("second sign-in = %d", r.status)
	}
	before, _ := ab.store.GetUserByName(ctx, "alice")

	form := ab.get(t, "/ui/account/authenticator", http.StatusOK)
	if !qrRE.MatchString(form) {
		t.Fatalf("no QR code in a sized wrapper:\n%s", form)
	}
	css := ab.c.get(t, static.URL("app.css"))
	if css.status != http.StatusOK || !regexp.MustCompile(`\.qr-code svg \{[^}]*width: 13rem;[^}]*height: 13rem;`).MatchString(css.body) {
		t.Error("the stylesheet does not size the QR code")
	}
	secret, state := match(t, secretRE, form), match(t, stateRE, form)
	if secret == ab.secret {
		t.Fatal("the form offers the current secret")
	}
	if strings.Contains(state, secret) {
		t.Fatal("the state carries the secret in the clear")
	}

	ab.clock.Add(30 * time.Second)
	for _, tt := range []struct {
		name, pw, code, want string
	}{
		{"code of the old secret", testPassword, ab.code(t, ab.secret), "The code is not right."},
		{"wrong password", "not my password at all", ab.code(t, secret), "The current password is not right."},
	} {
		r := ab.post(t, "/ui/account/authenticator", url.Values{"state": {state}, "current_password": {tt.pw}, "code": {tt.code}})
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, tt.want) {
			t.Fatalf("%s: POST = %d, want 422 with %q\n%s", tt.name, r.status, tt.want, r.body)
		}
		if match(t, secretRE, r.body) != secret {
			t.Errorf("%s: the refused form changed the secret", tt.name)
		}
	}
	if r := ab.post(t, "/ui/account/authenticator", url.Values{"state": {"forged"}, "current_password": {testPassword},
		"code": {ab.code(t, secret)}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/account/authenticator" {
		t.Errorf("forged state = %d to %q, want a fresh form", r.status, r.header.Get("Location"))
	}
	if u, _ := ab.store.GetUserByName(ctx, "alice"); string(u.SealedTOTP) != string(before.SealedTOTP) {
		t.Fatal("a refused form replaced the secret")
	}

	from := len(ab.c.seen)
	code := ab.code(t, secret)
	wantRedirect(t, ab.post(t, "/ui/account/authenticator", url.Values{"state": {state}, "current_password": {testPassword},
		"code": {code}}), "/ui/account")
	if body := ab.get(t, "/ui/account", http.StatusOK); !strings.Contains(body, "Authenticator replaced") {
		t.Error("no flash after the replacement")
	}
	if !signedOut(t, other) {
		t.Error("the other session survived the replacement")
	}
	if r := ab.client(t).signIn(t, "alice", testPassword, code, ""); r.status != http.StatusUnprocessableEntity {
		t.Errorf("the confirming code signs in again: %d", r.status)
	}
	// A step on, so each refusal below is the secret's; few enough failures not to throttle.
	ab.clock.Add(30 * time.Second)
	if r := ab.client(t).signIn(t, "alice", testPassword, ab.code(t, ab.secret), ""); r.status != http.StatusUnprocessableEntity {
		t.Errorf("sign-in with the old secret = %d, want 422", r.status)
	}
	if r := ab.client(t).signIn(t, "alice", testPassword, ab.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Errorf("sign-in with the new secret = %d, want 303", r.status)
	}
	// A form from before the replacement is stale: its generation is gone.
	ab.csrf = match(t, csrfRE, ab.get(t, "/ui/account", http.StatusOK))
	if r := ab.post(t, "/ui/account/authenticator", url.Values{"state": {state}, "current_password": {testPassword},
		"code": {ab.code(t, secret)}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/account/authenticator" {
		t.Errorf("replayed form = %d to %q, want a fresh form", r.status, r.header.Get("Location"))
	}
	noneContains(t, ab.c, from, "replacement", secret, testPassword)
}

func TestAccountRenewRecoveryCodes(t *testing.T) {
	ab := setupAccounts(t, nil)
	if r := ab.post(t, "/ui/account/recovery-codes", url.Values{"current_password": {"not my password at all"}}); r.status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.body, "The current password is not right.") {
		t.Fatalf("wrong password = %d\n%s", r.status, r.body)
	}
	r := ab.post(t, "/ui/account/recovery-codes", url.Values{"current_password": {testPassword}})
	codes := codesRE.FindAllString(r.body, -1)
	if r.status != http.StatusOK || len(codes) != 10 {
		t.Fatalf("renew = %d with %d codes, want 200 with 10\n%s", r.status, len(codes), r.body)
	}
	from := len(ab.c.seen)
	if signedOut(t, ab.c) {
		t.Fatal("renewing the codes ended the session")
	}

	if r := ab.client(t).signIn(t, "alice", testPassword, ab.codes[0], ""); r.status != http.StatusUnprocessableEntity {
		t.Errorf("an old code = %d, want 422", r.status)
	}
	ab.clock.Add(time.Hour)
	if r := ab.client(t).signIn(t, "alice", testPassword, codes[0], ""); r.status != http.StatusSeeOther {
		t.Errorf("a new code = %d, want 303", r.status)
	}
	noneContains(t, ab.c, from, "renewal", codes...)
}

func TestAccountSignOutEverywhere(t *testing.T) {
	ab := setupAccounts(t, nil)
	other := ab.client(t)
	ab.clock.Add(30 * time.Second)
	if r := other.signIn(t, "alice", testPassword, ab.code(t, ab.secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("second sign-in = %d", r.status)
	}
	wantRedirect(t, ab.post(t, "/ui/account/sign-out-everywhere", nil), session.SignInPath)
	if !signedOut(t, ab.c) || !signedOut(t, other) {
		t.Error("a session survived signing out everywhere")
	}
	if r := ab.c.get(t, "/ui/sign-in"); !strings.Contains(r.body, "You are signed out everywhere.") {
		t.Error("no flash on the sign-in page")
	}
}
