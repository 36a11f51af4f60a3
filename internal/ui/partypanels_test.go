package ui

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// fakePanels is a module with a panel on partner pages: one required text field and a
// checkbox, and an action that fails while the code is "fail".
type fakePanels struct {
	mu   sync.Mutex
	code string
	// orgs offers the panel on organization pages too.
	orgs bool
}

func (f *fakePanels) PartyPanel(_ context.Context, kind persistence.PartyKind, _ persistence.PartyName) (module.PartyPanel, bool, error) {
	if kind != persistence.PartyPartner && !f.orgs {
		return module.PartyPanel{}, false, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := module.PartyPanel{Module: "fake", Title: "Fake profile", Empty: "No fake profile.", Exists: f.code != "",
		Fields: []module.PanelField{
			{Name: "code", Label: "Code", Kind: module.FieldText, Value: f.code},
			{Name: "flag", Label: "Flag", Kind: module.FieldCheckbox},
		}}
	if p.Exists {
		p.Details = []module.PanelDetail{{Label: "Code", Value: f.code}}
		p.Actions = []module.PanelAction{{Name: "ping", Label: "Ping"}}
	}
	return p, true, nil
}

func (f *fakePanels) SavePartyPanel(_ context.Context, _ persistence.PartyKind, _ persistence.PartyName, form url.Values) error {
	if form.Get("code") == "" {
		return errors.Join(&persistence.FieldError{Field: "code", Message: "required"},
			&persistence.FieldError{Field: "retry.base", Message: "must be positive"})
	}
	f.mu.Lock()
	f.code = form.Get("code")
	f.mu.Unlock()
	return nil
}

func (f *fakePanels) RunPartyAction(_ context.Context, _ persistence.PartyKind, name persistence.PartyName, action, actor string) (module.ActionResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.code == "fail" {
		return module.ActionResult{}, &persistence.FieldError{Field: "code", Message: "the code refuses to ping"}
	}
	return module.ActionResult{OK: true, Summary: "Pinged " + string(name) + " for " + actor + ".",
		Steps: []module.ActionStep{{Name: "dns", OK: true, Detail: "found"}}, MessageID: 42}, nil
}

// TestPartyPanels renders a module's panel on the partner page, refuses its form with the
// errors beside the fields (or above them for a field the form lacks), and shows an
// action's result on the page.
func TestPartyPanels(t *testing.T) {
	b := newBundle(t)
	fake := &fakePanels{}
	s := newServer(t, b, func(d *Deps) {
		d.Actions = &countingActions{}
		d.PartyPanels = []module.PartyPanels{fake}
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	pb := &pagesBundle{bundle: b, c: b.client(t)}
	secret, _ := b.enroll(t, pb.c, "alice")
	if r := pb.c.signIn(t, "alice", testPassword, b.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d", r.status)
	}
	pb.csrf = match(t, csrfRE, pb.c.get(t, "/ui/").body)
	wantRedirect(t, pb.post(t, "/ui/partners", url.Values{"name": {"acme"}}), "/ui/partners/acme")
	wantRedirect(t, pb.post(t, "/ui/organizations", url.Values{"name": {"home"}}), "/ui/organizations/home")

	page := pb.get(t, "/ui/partners/acme", http.StatusOK)
	for _, want := range []string{"Fake profile", "No fake profile.", `href="/ui/partners/acme/panels/fake/edit"`} {
		if !strings.Contains(page, want) {
			t.Errorf("partner page lacks %q", want)
		}
	}
	if page := pb.get(t, "/ui/organizations/home", http.StatusOK); strings.Contains(page, "Fake profile") {
		t.Error("the organization page shows a panel the module has not for organizations")
	}
	pb.get(t, "/ui/organizations/home/panels/fake/edit", http.StatusNotFound)
	pb.get(t, "/ui/partners/acme/panels/other/edit", http.StatusNotFound)
	pb.get(t, "/ui/partners/nobody/panels/fake/edit", http.StatusNotFound)
	if r := pb.post(t, "/ui/partners/acme/panels/fake/actions/ping", nil); r.status != http.StatusNotFound {
		t.Errorf("an action before the record exists = %d, want 404", r.status)
	}

	refused := pb.post(t, "/ui/partners/acme/panels/fake", url.Values{"code": {""}, "flag": {"true"}})
	if refused.status != http.StatusUnprocessableEntity {
		t.Fatalf("refused form = %d", refused.status)
	}
	for _, want := range []string{`<span class="field-error" id="f-code-error">required</span>`,
		`<li>Retry: base: must be positive</li>`, `<li><a href="#f-code">Code</a>: required</li>`, `name="flag" type="checkbox" value="true" checked`} {
		if !strings.Contains(refused.body, want) {
			t.Errorf("refused form lacks %q\n%s", want, refused.body)
		}
	}

	wantRedirect(t, pb.post(t, "/ui/partners/acme/panels/fake", url.Values{"code": {"c-1"}}), "/ui/partners/acme")
	page = pb.get(t, "/ui/partners/acme", http.StatusOK)
	if !strings.Contains(page, "Saved.") || !strings.Contains(page, `action="/ui/partners/acme/panels/fake/actions/ping"`) {
		t.Errorf("partner page after saving:\n%s", page)
	}

	ping := pb.post(t, "/ui/partners/acme/panels/fake/actions/ping", nil)
	for _, want := range []string{"Pinged acme for user:alice.", `<a href="/ui/messages/42">`, "flash-success", "found"} {
		if ping.status != http.StatusOK || !strings.Contains(ping.body, want) {
			t.Errorf("ping = %d, lacks %q", ping.status, want)
		}
	}
	if r := pb.post(t, "/ui/partners/acme/panels/fake/actions/other", nil); r.status != http.StatusNotFound {
		t.Errorf("an action the panel does not offer = %d, want 404", r.status)
	}
	wantRedirect(t, pb.post(t, "/ui/partners/acme/panels/fake", url.Values{"code": {"fail"}}), "/ui/partners/acme")
	failed := pb.post(t, "/ui/partners/acme/panels/fake/actions/ping", nil)
	if failed.status != http.StatusOK || !strings.Contains(failed.body, "flash-danger") || !strings.Contains(failed.body, "the code refuses to ping") {
		t.Errorf("a refused action = %d:\n%s", failed.status, failed.body)
	}
	// Without the CSRF token, nothing runs.
	if r := pb.c.post(t, "/ui/partners/acme/panels/fake/actions/ping", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("action without CSRF token = %d, want 403", r.status)
	}
}
