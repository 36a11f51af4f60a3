package ui

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestRouteFormPicksParties: the route form's parties are selects of the stored parties
// with "any" first and chosen for a new route; an edit shows the route's own choices
// and the page names the route by its instances, not its id.
func TestRouteFormPicksParties(t *testing.T) {
	pb := setupPages(t)
	pb.seedRouting(t)
	sel := func(page, id string) string {
		m := regexp.MustCompile(`(?s)<select id="` + id + `"[^>]*>(.*?)</select>`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no select #%s:\n%s", id, page)
		}
		return m[1]
	}
	page := pb.get(t, "/ui/routes", http.StatusOK)
	if strings.Contains(page, `<input id="from"`) || strings.Contains(page, `<input id="to"`) {
		t.Error("a route's party is still typed")
	}
	tests := []struct{ id, wants string }{
		{"from", `<option value="*" selected>Any party (*)</option>`},
		{"from", `<option value="local">Us (local)</option>`},
		{"from", `<option value="acme">ACME Corp (acme)</option>`},
		{"to", `<option value="*" selected>Any party (*)</option>`},
		{"to", `<option value="acme">ACME Corp (acme)</option>`},
	}
	for _, tt := range tests {
		if got := sel(page, tt.id); !strings.Contains(got, tt.wants) {
			t.Errorf("#%s lacks %s:\n%s", tt.id, tt.wants, got)
		}
	}
	if got := sel(page, "from"); strings.Contains(got, "not found") {
		t.Errorf("any party shows as a stray value:\n%s", got)
	}

	wantRedirect(t, pb.post(t, "/ui/routes", map[string][]string{"source": {"outbox"}, "from": {"local"}, "to": {"acme"},
		"target": {"inbox"}}), "/ui/routes")
	routes, err := pb.store.ListRoutes(t.Context())
	if err != nil || len(routes) != 1 {
		t.Fatalf("routes = %+v, %v", routes, err)
	}
	edit := pb.get(t, fmt.Sprintf("/ui/routes/%d/edit", routes[0].ID), http.StatusOK)
	if got := sel(edit, "to"); !strings.Contains(got, `<option value="acme" selected>`) || strings.Contains(got, `value="*" selected`) {
		t.Errorf("the edit form does not choose the route's partner:\n%s", got)
	}
	if !strings.Contains(edit, "<h1>Edit the route from outbox to inbox</h1>") {
		t.Errorf("the edit page does not name the route by its instances")
	}
}
