package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"wharf/internal/persistence"
	_ "wharf/internal/protocol/file"
	"wharf/internal/records"
)

// seedRouting creates organization local, partner acme, a file poller "outbox" and file
// writers "inbox" and "archive".
func (pb *pagesBundle) seedRouting(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, p := range []persistence.Party{{Kind: persistence.PartyOrganization, Name: "local", DisplayName: "Us"},
		{Kind: persistence.PartyPartner, Name: "acme", DisplayName: "ACME Corp"}} {
		if _, err := pb.store.CreateParty(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name persistence.InstanceName
		typ  persistence.PluginType
	}{{"outbox", persistence.PluginFilePoller}, {"inbox", persistence.PluginFileWriter}, {"archive", persistence.PluginFileWriter}} {
		dir, _ := json.Marshal(t.TempDir())
		_, err := pb.store.CreatePluginConfig(ctx, persistence.PluginConfig{Name: c.name, Type: c.typ, Enabled: true,
			Config: json.RawMessage(`{"directory":` + string(dir) + `}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestRouteCreateDelete(t *testing.T) {
	pb := setupPages(t)
	pb.seedRouting(t)
	ctx := context.Background()

	page := pb.get(t, "/ui/routes", http.StatusOK)
	sources, targets, _ := strings.Cut(page, `id="target"`)
	if !strings.Contains(sources, `<option value="outbox"`) || strings.Contains(sources, `<option value="inbox"`) ||
		!strings.Contains(targets, `<option value="inbox"`) || strings.Contains(targets, `<option value="outbox"`) {
		t.Errorf("selects do not split instances by role:\n%s", page)
	}

	wantRedirect(t, pb.post(t, "/ui/routes", url.Values{"source": {"outbox"}, "from": {"*"}, "to": {"acme"},
		"target": {"inbox"}, "ordered": {"true"}}), "/ui/routes")
	routes, err := pb.store.ListRoutes(ctx)
	if err != nil || len(routes) != 1 {
		t.Fatalf("routes = %+v, %v", routes, err)
	}
	rt := routes[0]
	if rt.Source != "outbox" || rt.From != "*" || rt.To != "acme" || rt.Target != "inbox" || !rt.Ordered {
		t.Errorf("created %+v", rt)
	}
	if pb.actions.count() != 1 {
		t.Errorf("RoutesChanged calls after create = %d, want 1", pb.actions.count())
	}
	page = pb.get(t, "/ui/routes", http.StatusOK)
	if !strings.Contains(page, "Route added.") || !strings.Contains(page, fmt.Sprintf(`action="/ui/routes/%d/delete"`, rt.ID)) ||
		!strings.Contains(page, "data-confirm=") {
		t.Errorf("list after create:\n%s", page)
	}

	// The party detail lists the route, and the party cannot go while the route names it.
	if body := pb.get(t, "/ui/partners/acme", http.StatusOK); !strings.Contains(body, `<td class="mono col-key">inbox</td>`) {
		t.Errorf("partner detail does not list its route:\n%s", body)
	}
	wantRedirect(t, pb.post(t, "/ui/partners/acme/delete", nil), "/ui/partners/acme")
	if body := pb.get(t, "/ui/partners/acme", http.StatusOK); !strings.Contains(body, "a route names this party") ||
		!strings.Contains(body, "flash-danger") {
		t.Errorf("refused delete shows no reason:\n%s", body)
	}
	if _, err := pb.store.GetParty(ctx, persistence.PartyPartner, "acme"); err != nil {
		t.Errorf("partner named by a route was deleted: %v", err)
	}

	wantRedirect(t, pb.post(t, fmt.Sprintf("/ui/routes/%d/delete", rt.ID), nil), "/ui/routes")
	if routes, err := pb.store.ListRoutes(ctx); err != nil || len(routes) != 0 {
		t.Errorf("routes after delete = %+v, %v", routes, err)
	}
	if pb.actions.count() != 2 {
		t.Errorf("RoutesChanged calls after delete = %d, want 2", pb.actions.count())
	}
	for _, path := range []string{fmt.Sprintf("/ui/routes/%d/delete", rt.ID), "/ui/routes/x/delete"} {
		if r := pb.post(t, path, nil); r.status != http.StatusNotFound {
			t.Errorf("POST %s = %d, want 404", path, r.status)
		}
	}
	wantRedirect(t, pb.post(t, "/ui/partners/acme/delete", nil), "/ui/partners")
}

// TestRouteFormRefused holds the form to the REST API's outcome: records refuses the same
// input with the same fields and messages, and the form keeps what was typed.
func TestRouteFormRefused(t *testing.T) {
	pb := setupPages(t)
	pb.seedRouting(t)
	ctx := context.Background()
	if _, err := records.CreateRoute(ctx, pb.store, records.RouteInput{Source: "outbox", From: "local", To: "acme", Target: "inbox"}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		in   records.RouteInput
	}{
		{"unknown party", records.RouteInput{Source: "outbox", From: "local", To: "nobody", Target: "archive"}},
		{"invalid pattern", records.RouteInput{Source: "outbox", From: "Local", To: "*", Target: "archive"}},
		{"target as source", records.RouteInput{Source: "inbox", From: "*", To: "*", Target: "archive"}},
		{"missing fields", records.RouteInput{}},
		{"same route", records.RouteInput{Source: "outbox", From: "local", To: "acme", Target: "inbox"}},
		{"covers an existing route", records.RouteInput{Source: "outbox", From: "*", To: "acme", Target: "inbox", Ordered: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := url.Values{"source": {tt.in.Source}, "from": {tt.in.From}, "to": {tt.in.To}, "target": {tt.in.Target}}
			if tt.in.Ordered {
				form.Set("ordered", "true")
			}
			r := pb.post(t, "/ui/routes", form)
			if r.status != http.StatusUnprocessableEntity {
				t.Fatalf("POST = %d, want 422\n%s", r.status, r.body)
			}
			for _, v := range []string{tt.in.From, tt.in.To} {
				if !strings.Contains(r.body, `value="`+template.HTMLEscapeString(v)+`"`) {
					t.Errorf("refused form lost %q", v)
				}
			}
			if tt.in.Ordered && !strings.Contains(r.body, " checked") {
				t.Error("refused form lost ordered")
			}

			_, apiErr := records.CreateRoute(ctx, pb.store, tt.in)
			if redundant := (*records.RedundantRouteError)(nil); errors.As(apiErr, &redundant) {
				want := `<div class="flash flash-danger" role="alert"><p>` + template.HTMLEscapeString(redundant.Error())
				if !strings.Contains(r.body, want) {
					t.Errorf("form lacks the refusal %q\n%s", redundant.Error(), r.body)
				}
				return
			}
			want, ok := fieldMessages(apiErr)
			if !ok || len(want) == 0 {
				t.Fatalf("records refusal = %v, want field errors", apiErr)
			}
			for f, msg := range want {
				html := `<span class="field-error" id="` + f + `-error">` + template.HTMLEscapeString(msg) + `</span>`
				if !strings.Contains(r.body, html) {
					t.Errorf("form lacks the %s error %q\n%s", f, msg, r.body)
				}
			}
		})
	}
	if routes, err := pb.store.ListRoutes(ctx); err != nil || len(routes) != 1 {
		t.Errorf("refused forms wrote routes: %+v, %v", routes, err)
	}
	if pb.actions.count() != 0 {
		t.Errorf("RoutesChanged calls = %d, want 0", pb.actions.count())
	}
}
