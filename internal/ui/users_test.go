package ui

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

var setupLinkRE = regexp.MustCompile(`id="setup-link">https?://[^/]+(/ui/setup/[A-Za-z0-9_-]+)</code>`)

// TestUsersAdminOnly refuses every users page and action to an operator with 403, and the
// navigation does not offer the page.
func TestUsersAdminOnly(t *testing.T) {
	ab := setupAccounts(t, nil)
	op, csrf, _ := ab.signedIn(t, "olga", persistence.RoleOperator)
	if home := op.get(t, "/ui/"); strings.Contains(home.body, `href="/ui/users"`) {
		t.Error("the navigation offers the users page to an operator")
	}
	for _, tt := range []struct{ method, path string }{
		{http.MethodGet, "/ui/users"},
		{http.MethodGet, "/ui/users/alice"},
		{http.MethodGet, "/ui/users/nobody"},
		{http.MethodPost, "/ui/users"},
		{http.MethodPost, "/ui/users/alice/role"},
		{http.MethodPost, "/ui/users/alice/reset"},
		{http.MethodPost, "/ui/users/alice/disable"},
		{http.MethodPost, "/ui/users/alice/enable"},
		{http.MethodPost, "/ui/users/alice/sign-out"},
		{http.MethodPost, "/ui/users/alice/delete"},
	} {
		var form url.Values
		if tt.method == http.MethodPost {
			form = url.Values{"csrf_token": {csrf}, "name": {"mallory"}, "role": {"operator"}}
		}
		if r := op.do(t, tt.method, tt.path, form); r.status != http.StatusForbidden {
			t.Errorf("operator %s %s = %d, want 403", tt.method, tt.path, r.status)
		}
	}
	u, err := ab.store.GetUserByName(context.Background(), "alice")
	if err != nil || u.Disabled || u.Role != persistence.RoleAdmin {
		t.Errorf("alice after the operator's attempts = %+v, %v", u, err)
	}
	if _, err := ab.store.GetUserByName(context.Background(), "mallory"); err == nil {
		t.Error("the operator created a user")
	}
}

func TestUserCreateAndReset(t *testing.T) {
	ab := setupAccounts(t, nil)
	ctx := context.Background()
	if body := ab.get(t, "/ui/users", http.StatusOK); !strings.Contains(body, `href="/ui/users/alice"`) {
		t.Fatalf("list lacks alice:\n%s", body)
	}

	for _, tt := range []struct {
		name        string
		form        url.Values
		field, want string
	}{
		{"bad name", url.Values{"name": {"Bob Smith"}, "display_name": {"Bob"}, "role": {"operator"}}, "name", "Use 1 to 64"},
		{"taken name", url.Values{"name": {"alice"}, "display_name": {"Other"}, "role": {"operator"}}, "name", "already exists"},
		{"bad role", url.Values{"name": {"bob"}, "display_name": {"Bob"}, "role": {"root"}}, "role", "Choose administrator or operator."},
		{"long display name", url.Values{"name": {"bob"}, "display_name": {strings.Repeat("x", 201)}, "role": {"operator"}}, "display_name", "at most 200"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ab.post(t, "/ui/users", tt.form)
			if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="`+tt.field+`-error"`) || !strings.Contains(r.body, tt.want) {
				t.Fatalf("POST = %d, want 422 with %q at %s\n%s", r.status, tt.want, tt.field, r.body)
			}
			if !strings.Contains(r.body, `value="`+tt.form.Get("name")+`"`) {
				t.Error("the refused form lost the name")
			}
		})
	}

	r := ab.post(t, "/ui/users", url.Values{"name": {"bob"}, "display_name": {"Bob Builder"}, "role": {"operator"}})
	if r.status != http.StatusOK {
		t.Fatalf("create = %d\n%s", r.status, r.body)
	}
	link := match(t, setupLinkRE, r.body)
	bob, err := ab.store.GetUserByName(ctx, "bob")
	if err != nil || bob.Role != persistence.RoleOperator || bob.DisplayName != "Bob Builder" || bob.SetupTokenHash != setupTokenHash(strings.TrimPrefix(link, "/ui/setup/")) {
		t.Fatalf("stored bob = %+v, %v", bob, err)
	}
	from := len(ab.c.seen)
	list := ab.get(t, "/ui/users", http.StatusOK)
	if !strings.Contains(list, `href="/ui/users/bob"`) || !strings.Contains(list, "setup pending") {
		t.Errorf("list after create:\n%s", list)
	}
	detail := ab.get(t, "/ui/users/bob", http.StatusOK)
	for _, want := range []string{"Bob Builder", `data-confirm="Delete user bob?"`, `action="/ui/users/bob/reset"`} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	noneContains(t, ab.c, from, "creation", strings.TrimPrefix(link, "/ui/setup/"))
	if r := ab.client(t).get(t, link); r.status != http.StatusOK {
		t.Fatalf("the shown link = %d, want the set-up form", r.status)
	}

	r = ab.post(t, "/ui/users/bob/reset", nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Every session of") {
		t.Fatalf("reset = %d\n%s", r.status, r.body)
	}
	newLink := match(t, setupLinkRE, r.body)
	if newLink == link {
		t.Fatal("reset showed the old link")
	}
	if r := ab.client(t).get(t, link); r.status != http.StatusNotFound {
		t.Errorf("old link after reset = %d, want 404", r.status)
	}
	if r := ab.client(t).get(t, newLink); r.status != http.StatusOK {
		t.Errorf("new link = %d, want 200", r.status)
	}
	if r := ab.c.get(t, "/ui/users/nobody"); r.status != http.StatusNotFound {
		t.Errorf("unknown user = %d, want 404", r.status)
	}
	if r := ab.post(t, "/ui/users/nobody/disable", nil); r.status != http.StatusNotFound {
		t.Errorf("disable unknown user = %d, want 404", r.status)
	}
}

func TestUserDisableEnableSignOutDelete(t *testing.T) {
	ab := setupAccounts(t, nil)
	ctx := context.Background()
	bob, _, bobSecret := ab.signedIn(t, "bob", persistence.RoleOperator)

	wantRedirect(t, ab.post(t, "/ui/users/bob/disable", nil), "/ui/users/bob")
	if body := ab.get(t, "/ui/users/bob", http.StatusOK); !strings.Contains(body, "User disabled") || !strings.Contains(body, `action="/ui/users/bob/enable"`) {
		t.Errorf("detail after disable:\n%s", body)
	}
	if !signedOut(t, bob) {
		t.Fatal("a disabled user's session still works")
	}
	ab.clock.Add(30 * time.Second)
	if r := bob.signIn(t, "bob", testPassword, ab.code(t, bobSecret), ""); r.status != http.StatusUnprocessableEntity {
		t.Errorf("a disabled user signs in: %d", r.status)
	}

	wantRedirect(t, ab.post(t, "/ui/users/bob/enable", nil), "/ui/users/bob")
	ab.clock.Add(30 * time.Second)
	if r := bob.signIn(t, "bob", testPassword, ab.code(t, bobSecret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in after enable = %d", r.status)
	}

	wantRedirect(t, ab.post(t, "/ui/users/bob/sign-out", nil), "/ui/users/bob")
	if !signedOut(t, bob) {
		t.Error("bob's session survived signing him out everywhere")
	}

	wantRedirect(t, ab.post(t, "/ui/users/bob/role", url.Values{"role": {"admin"}}), "/ui/users/bob")
	if u, _ := ab.store.GetUserByName(ctx, "bob"); u.Role != persistence.RoleAdmin {
		t.Errorf("bob's role = %s, want admin", u.Role)
	}
	if r := ab.post(t, "/ui/users/bob/role", url.Values{"role": {"root"}}); r.status != http.StatusBadRequest {
		t.Errorf("unknown role = %d, want 400", r.status)
	}

	wantRedirect(t, ab.post(t, "/ui/users/bob/delete", nil), "/ui/users")
	if body := ab.get(t, "/ui/users", http.StatusOK); !strings.Contains(body, "User deleted.") || strings.Contains(body, `href="/ui/users/bob"`) {
		t.Errorf("list after delete:\n%s", body)
	}
	if _, err := ab.store.GetUserByName(ctx, "bob"); err == nil {
		t.Error("bob is still stored")
	}
}

// TestUserLastAdministrator refuses, with a flash, to disable, delete or demote the last
// administrator who can sign in.
func TestUserLastAdministrator(t *testing.T) {
	ab := setupAccounts(t, nil)
	ab.signedIn(t, "olga", persistence.RoleOperator)
	for _, tt := range []struct {
		action string
		form   url.Values
	}{
		{"disable", nil},
		{"delete", nil},
		{"role", url.Values{"role": {"operator"}}},
	} {
		wantRedirect(t, ab.post(t, "/ui/users/alice/"+tt.action, tt.form), "/ui/users/alice")
		if body := ab.get(t, "/ui/users/alice", http.StatusOK); !strings.Contains(body, "Refused: nobody else could sign in as an administrator") {
			t.Errorf("%s: no refusal flash:\n%s", tt.action, body)
		}
	}
	u, err := ab.store.GetUserByName(context.Background(), "alice")
	if err != nil || u.Disabled || u.Role != persistence.RoleAdmin {
		t.Fatalf("alice after the refusals = %+v, %v", u, err)
	}
	if signedOut(t, ab.c) {
		t.Error("a refused action ended alice's session")
	}

	// With a second administrator, alice may step down, and lands on her account page.
	ab.signedIn(t, "carol", persistence.RoleAdmin)
	wantRedirect(t, ab.post(t, "/ui/users/alice/role", url.Values{"role": {"operator"}}), "/ui/account")
	if r := ab.c.get(t, "/ui/users"); r.status != http.StatusForbidden {
		t.Errorf("users page after stepping down = %d, want 403", r.status)
	}
}
