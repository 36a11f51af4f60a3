package ui

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

// countingActions counts route reloads; the message actions are not used by these pages.
type countingActions struct {
	mu      sync.Mutex
	changes int
}

func (a *countingActions) Redispatch(context.Context, int64, string) ([]persistence.Delivery, error) {
	return nil, errors.New("not used")
}

func (a *countingActions) Redeliver(context.Context, int64, persistence.ResendMode, string) (persistence.Delivery, error) {
	return persistence.Delivery{}, errors.New("not used")
}

func (a *countingActions) RoutesChanged(context.Context) {
	a.mu.Lock()
	a.changes++
	a.mu.Unlock()
}

func (a *countingActions) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changes
}

// pagesBundle is a server with the party and route pages mounted and a signed-in client.
type pagesBundle struct {
	*bundle
	actions *countingActions
	c       *client
	csrf    string
}

// setupPages serves the UI with counting actions and signs a user in.
func setupPages(t *testing.T) *pagesBundle {
	t.Helper()
	b := newBundle(t)
	acts := &countingActions{}
	s := newServer(t, b, func(d *Deps) { d.Actions = acts })
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)

	pb := &pagesBundle{bundle: b, actions: acts, c: b.client(t)}
	secret, _ := b.enroll(t, pb.c, "alice")
	if r := pb.c.signIn(t, "alice", testPassword, b.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d\n%s", r.status, r.body)
	}
	pb.csrf = match(t, csrfRE, pb.c.get(t, "/ui/").body)
	return pb
}

// post sends a form with the session's CSRF token.
func (pb *pagesBundle) post(t *testing.T, path string, form url.Values) response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set(session.CSRFField, pb.csrf)
	return pb.c.post(t, path, form)
}

// get fetches a page and checks the status and that it keeps to the CSP.
func (pb *pagesBundle) get(t *testing.T, path string, status int) string {
	t.Helper()
	r := pb.c.get(t, path)
	if r.status != status {
		t.Fatalf("GET %s = %d, want %d\n%s", path, r.status, status, r.body)
	}
	if strings.Contains(r.body, " style=") || strings.Contains(r.body, "<style") {
		t.Errorf("GET %s: inline style", path)
	}
	return r.body
}

func wantRedirect(t *testing.T, r response, to string) {
	t.Helper()
	if r.status != http.StatusSeeOther || r.header.Get("Location") != to {
		t.Fatalf("answer = %d to %q, want 303 to %q\n%s", r.status, r.header.Get("Location"), to, r.body)
	}
}

func TestPartnerCreateEditDelete(t *testing.T) {
	pb := setupPages(t)
	ctx := context.Background()

	if body := pb.get(t, "/ui/partners", http.StatusOK); !strings.Contains(body, "No partner yet.") {
		t.Errorf("empty list:\n%s", body)
	}
	if body := pb.get(t, "/ui/partners/new", http.StatusOK); !strings.Contains(body, `name="display_name"`) {
		t.Errorf("new form:\n%s", body)
	}
	wantRedirect(t, pb.post(t, "/ui/partners", url.Values{"name": {"acme"}, "display_name": {"ACME Corp"}}), "/ui/partners/acme")
	if pb.actions.count() != 1 {
		t.Errorf("RoutesChanged calls after create = %d, want 1", pb.actions.count())
	}
	detail := pb.get(t, "/ui/partners/acme", http.StatusOK)
	for _, want := range []string{"ACME Corp", "Saved.", `<time datetime="`, `data-confirm="Delete partner acme?"`} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q\n%s", want, detail)
		}
	}
	if body := pb.get(t, "/ui/partners", http.StatusOK); !strings.Contains(body, `href="/ui/partners/acme"`) {
		t.Errorf("list has no link to the partner:\n%s", body)
	}
	if body := pb.get(t, "/ui/organizations", http.StatusOK); strings.Contains(body, "acme") {
		t.Error("a partner is listed as an organization")
	}

	if body := pb.get(t, "/ui/partners/acme/edit", http.StatusOK); !strings.Contains(body, `value="ACME Corp"`) {
		t.Errorf("edit form does not show the display name:\n%s", body)
	}
	wantRedirect(t, pb.post(t, "/ui/partners/acme", url.Values{"display_name": {"Acme Inc"}}), "/ui/partners/acme")
	if p, err := pb.store.GetParty(ctx, persistence.PartyPartner, "acme"); err != nil || p.DisplayName != "Acme Inc" {
		t.Errorf("after update: %+v, %v", p, err)
	}

	wantRedirect(t, pb.post(t, "/ui/partners/acme/delete", nil), "/ui/partners")
	if _, err := pb.store.GetParty(ctx, persistence.PartyPartner, "acme"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("after delete: %v, want not found", err)
	}
	if body := pb.get(t, "/ui/partners", http.StatusOK); !strings.Contains(body, "Deleted.") {
		t.Error("no flash after delete")
	}
	if pb.actions.count() != 3 {
		t.Errorf("RoutesChanged calls = %d, want 3", pb.actions.count())
	}

	wantRedirect(t, pb.post(t, "/ui/organizations", url.Values{"name": {"local"}}), "/ui/organizations/local")
	if p, err := pb.store.GetParty(ctx, persistence.PartyOrganization, "local"); err != nil || p.DisplayName != "local" {
		t.Errorf("organization: %+v, %v; want the name as display name", p, err)
	}
}

// TestPartyFormRefused holds the form to the REST API's outcome: the same input through
// records gives the same fields and messages, and the form shows them beside what was typed.
func TestPartyFormRefused(t *testing.T) {
	pb := setupPages(t)
	ctx := context.Background()
	wantRedirect(t, pb.post(t, "/ui/partners", url.Values{"name": {"acme"}}), "/ui/partners/acme")

	tests := []struct {
		name, party, display string
		fields               []string
	}{
		{"invalid name", "Not Valid!", "Typed Name", []string{"name"}},
		{"control character", "globex", "Globex\x01", []string{"display_name"}},
		{"both", "", strings.Repeat("x", records.MaxDisplayNameLen+1), []string{"name", "display_name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := pb.post(t, "/ui/partners", url.Values{"name": {tt.party}, "display_name": {tt.display}})
			if r.status != http.StatusUnprocessableEntity {
				t.Fatalf("POST = %d, want 422\n%s", r.status, r.body)
			}
			if !strings.Contains(r.body, `value="`+template.HTMLEscapeString(tt.party)+`"`) {
				t.Error("refused form lost the typed name")
			}
			_, apiErr := records.CreateParty(ctx, pb.store, persistence.PartyPartner,
				records.PartyInput{Name: tt.party, DisplayName: tt.display})
			want, ok := fieldMessages(apiErr)
			if !ok || len(want) != len(tt.fields) {
				t.Fatalf("records refusal = %v, want field errors on %v", apiErr, tt.fields)
			}
			for _, f := range tt.fields {
				html := `<span class="field-error" id="` + f + `-error">` + template.HTMLEscapeString(want[f]) + `</span>`
				if !strings.Contains(r.body, html) {
					t.Errorf("form lacks the %s error %q\n%s", f, want[f], r.body)
				}
			}
		})
	}

	r := pb.post(t, "/ui/partners", url.Values{"name": {"acme"}, "display_name": {"Second"}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "A partner with this name already exists.") ||
		!strings.Contains(r.body, `value="Second"`) {
		t.Errorf("duplicate name = %d\n%s", r.status, r.body)
	}
	if _, err := records.CreateParty(ctx, pb.store, persistence.PartyPartner, records.PartyInput{Name: "acme"}); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("records on a duplicate name = %v, want ErrConflict", err)
	}

	r = pb.post(t, "/ui/partners/acme", url.Values{"display_name": {"Bad\x7f"}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="display_name-error"`) {
		t.Errorf("refused update = %d\n%s", r.status, r.body)
	}
	if list, total, err := pb.store.ListParties(ctx, persistence.PartyPartner, persistence.ListOptions{}); err != nil || total != 1 ||
		list[0].DisplayName != "acme" {
		t.Errorf("refused forms wrote: %+v, %v", list, err)
	}
	if pb.actions.count() != 1 {
		t.Errorf("RoutesChanged calls = %d, want 1 (the first create only)", pb.actions.count())
	}
}

func TestPartyUnknownOrForeign(t *testing.T) {
	pb := setupPages(t)
	wantRedirect(t, pb.post(t, "/ui/partners", url.Values{"name": {"acme"}}), "/ui/partners/acme")
	for _, path := range []string{"/ui/partners/nobody", "/ui/partners/nobody/edit", "/ui/organizations/acme",
		"/ui/partners/Not%20A%20Name"} {
		pb.get(t, path, http.StatusNotFound)
	}
	for _, path := range []string{"/ui/partners/nobody", "/ui/partners/nobody/delete", "/ui/organizations/acme/delete"} {
		if r := pb.post(t, path, url.Values{"display_name": {"x"}}); r.status != http.StatusNotFound {
			t.Errorf("POST %s = %d, want 404", path, r.status)
		}
	}
}

func TestPagesRefuseMissingCSRF(t *testing.T) {
	pb := setupPages(t)
	wantRedirect(t, pb.post(t, "/ui/partners", url.Values{"name": {"acme"}}), "/ui/partners/acme")
	for _, path := range []string{"/ui/partners", "/ui/partners/acme", "/ui/partners/acme/delete", "/ui/routes", "/ui/routes/1/delete"} {
		if r := pb.c.post(t, path, url.Values{"name": {"globex"}, "display_name": {"x"}}); r.status != http.StatusForbidden {
			t.Errorf("POST %s without CSRF token = %d, want 403", path, r.status)
		}
	}
	if p, err := pb.store.GetParty(context.Background(), persistence.PartyPartner, "acme"); err != nil || p.DisplayName != "acme" {
		t.Errorf("refused posts changed the partner: %+v, %v", p, err)
	}
}
