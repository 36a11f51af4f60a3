package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The route form takes session_by for an ordered route and refuses it on an unordered one
// with the field's message.
func TestRouteFormSessionBy(t *testing.T) {
	pb := setupPages(t)
	pb.seedRouting(t)
	r := pb.post(t, "/ui/routes", url.Values{"source": {"outbox"}, "from": {"*"}, "to": {"acme"},
		"target": {"inbox"}, "session_by": {"x-order-id"}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="session_by-error"`) ||
		!strings.Contains(r.body, "applies only to an ordered route") {
		t.Fatalf("unordered route with session_by: %d\n%s", r.status, r.body)
	}
	wantRedirect(t, pb.post(t, "/ui/routes", url.Values{"source": {"outbox"}, "from": {"*"}, "to": {"acme"},
		"target": {"inbox"}, "ordered": {"true"}, "session_by": {"x-order-id"}}), "/ui/routes")
	routes, err := pb.store.ListRoutes(context.Background())
	if err != nil || len(routes) != 1 || routes[0].SessionBy != "x-order-id" || !routes[0].Ordered {
		t.Fatalf("routes = %+v, %v", routes, err)
	}
	if page := pb.get(t, "/ui/routes", http.StatusOK); !strings.Contains(page, `<td class="mono col-minor">x-order-id</td>`) {
		t.Fatalf("list does not show session_by:\n%s", page)
	}
}
