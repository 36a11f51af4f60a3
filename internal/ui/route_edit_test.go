package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// TestRouteEdit edits a route in the UI: the edit page shows the route and its retry
// override, a save goes through the rules REST applies (a refused retry cell is marked
// and keeps what was typed), the change is audited as the signed-in user, the route
// cache is told, and emptying every retry cell gives the target's policy back.
func TestRouteEdit(t *testing.T) {
	pb := setupPages(t)
	pb.seedRouting(t)
	ctx := context.Background()

	wantRedirect(t, pb.post(t, "/ui/routes", url.Values{"source": {"outbox"}, "from": {"*"}, "to": {"acme"}, "target": {"inbox"},
		"retry.rules.http_5xx.strategy": {"exponential"}, "retry.rules.http_5xx.base": {"10s"},
		"retry.rules.http_5xx.max_retries": {"8"}, "retry.rules.http_4xx.never": {"true"}}), "/ui/routes")
	routes, err := pb.store.ListRoutes(ctx)
	if err != nil || len(routes) != 1 {
		t.Fatalf("routes = %+v, %v", routes, err)
	}
	rt := routes[0]
	if p := rt.Retry; p == nil || p.Rules.For(retry.ClassHTTP5xx) == nil || *p.Rules.HTTP5xx.MaxRetries != 8 ||
		p.Rules.For(retry.ClassHTTP4xx) == nil || !p.Rules.HTTP4xx.Never || p.Rules.For(retry.ClassTimeout) != nil {
		t.Fatalf("created route's policy %+v", rt.Retry)
	}
	list := pb.get(t, "/ui/routes", http.StatusOK)
	editPath := fmt.Sprintf("/ui/routes/%d/edit", rt.ID)
	if !strings.Contains(list, `href="`+editPath+`"`) || !strings.Contains(list, "Its own") {
		t.Errorf("list does not offer the edit or show the policy:\n%s", list)
	}

	page := pb.get(t, editPath, http.StatusOK)
	for _, want := range []string{`<option value="inbox" selected>`, `name="retry.rules.http_5xx.base" type="text" size="6" autocomplete="off" spellcheck="false" value="10s"`,
		`id="cfg-retry-rules-http_4xx-never" name="retry.rules.http_4xx.never" type="checkbox" value="true" aria-label="Never retry: HTTP 4xx (request refused)" checked`,
		"HTTP 5xx (receiver failed)", "First delay", "Longest delay", "<details class=\"field\" open>"} {
		if !strings.Contains(page, want) {
			t.Errorf("edit page lacks %s:\n%s", want, page)
		}
	}

	// A refused cell is named and the form keeps what was typed.
	path := fmt.Sprintf("/ui/routes/%d", rt.ID)
	r := pb.post(t, path, url.Values{"source": {"outbox"}, "from": {"local"}, "to": {"acme"}, "target": {"archive"},
		"retry.rules.timeout.base": {"soon"}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="cfg-retry-rules-timeout-base-error"`) ||
		!strings.Contains(r.body, `value="soon"`) || !strings.Contains(r.body, `<option value="archive" selected>`) {
		t.Fatalf("refused edit = %d:\n%s", r.status, r.body)
	}
	before := pb.actions.count()
	wantRedirect(t, pb.post(t, path, url.Values{"source": {"outbox"}, "from": {"local"}, "to": {"acme"}, "target": {"archive"},
		"ordered": {"true"}, "retry.max_retries": {"3"}}), "/ui/routes")
	got, err := pb.store.GetRoute(ctx, rt.ID)
	if err != nil || got.From != "local" || got.Target != "archive" || !got.Ordered || got.Retry == nil ||
		*got.Retry.MaxRetries != 3 || got.Retry.Rules.For(retry.ClassHTTP5xx) != nil {
		t.Fatalf("edited route %+v, %v", got, err)
	}
	if pb.actions.count() != before+1 {
		t.Error("RoutesChanged not called on edit")
	}
	events, _, err := pb.store.ListAudit(ctx, persistence.AuditFilter{Kind: "route", Action: "update"})
	if err != nil || len(events) != 1 || events[0].Actor != "user:alice" {
		t.Fatalf("audit = %+v, %v", events, err)
	}
	changes := string(audit.ChangesJSON(events[0].Changes))
	for _, want := range []string{`"path":"from"`, `"path":"target"`, `"path":"retry.max_retries"`, `"path":"retry.rules.http_5xx.base"`} {
		if !strings.Contains(changes, want) {
			t.Errorf("audit changes %s lack %s", changes, want)
		}
	}

	// No retry cell set: the target's policy again.
	wantRedirect(t, pb.post(t, path, url.Values{"source": {"outbox"}, "from": {"local"}, "to": {"acme"}, "target": {"archive"}}), "/ui/routes")
	if got, _ := pb.store.GetRoute(ctx, rt.ID); got.Retry != nil {
		t.Fatalf("route keeps policy %+v", got.Retry)
	}
	pb.get(t, "/ui/routes/99999/edit", http.StatusNotFound)
	if r := pb.post(t, "/ui/routes/99999", url.Values{"source": {"outbox"}, "from": {"*"}, "to": {"*"}, "target": {"inbox"}}); r.status != http.StatusNotFound {
		t.Errorf("edit of a missing route = %d", r.status)
	}
}
