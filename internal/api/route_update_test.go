package api

import (
	"fmt"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// TestUpdateRoute edits a route over REST: fields and retry override change, the route
// cache is told, the audit names the actor and the changed fields, and an edit is refused
// as create refuses a route (invalid fields, a retry field named in full, coverage of
// another route), besides a route that does not exist.
func TestUpdateRoute(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		var rt persistence.Route
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"local","to":"acme","target":"inbox",
			"retry":{"rules":{"http_4xx":{"never":true}}}}`).json(t, &rt)
		if rt.Retry == nil || rt.Retry.Rules.For(retry.ClassHTTP4xx) == nil {
			t.Fatalf("created %+v", rt)
		}
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"*","to":"*","target":"archive"}`)
		path := fmt.Sprintf("/api/v1/routes/%d", rt.ID)
		before := b.ops.changes()

		var got persistence.Route
		b.must(200, "PUT", path, `{"source":"outbox","from":"*","to":"acme","target":"inbox","ordered":true,
			"retry":{"max_retries":3,"rules":{"http_5xx":{"strategy":"exponential","base":"10s","max_delay":"10m","max_retries":8}}}}`).json(t, &got)
		r := got.Retry
		if got.ID != rt.ID || got.From != "*" || !got.Ordered || r == nil || *r.MaxRetries != 3 ||
			r.Rules.For(retry.ClassHTTP5xx) == nil || r.Rules.For(retry.ClassHTTP4xx) != nil {
			t.Fatalf("updated %+v", got)
		}
		if b.ops.changes() != before+1 {
			t.Error("RoutesChanged not called on update")
		}
		var stored persistence.Route
		b.must(200, "GET", path, "").json(t, &stored)
		if stored.From != "*" || stored.Retry == nil || *stored.Retry.Rules.HTTP5xx.MaxRetries != 8 {
			t.Fatalf("stored %+v", stored)
		}

		var list struct {
			Events []struct {
				Actor   string `json:"actor"`
				Action  string `json:"action"`
				Changes []struct {
					Path string `json:"path"`
				} `json:"changes"`
			} `json:"events"`
		}
		b.must(200, "GET", fmt.Sprintf("/api/v1/audit?kind=route&action=update&record_id=%d", rt.ID), "").json(t, &list)
		if len(list.Events) != 1 || list.Events[0].Actor != "token:tester" {
			t.Fatalf("audit %+v", list)
		}
		var paths []string
		for _, c := range list.Events[0].Changes {
			paths = append(paths, c.Path)
		}
		for _, want := range []string{"from", "ordered", "retry.max_retries", "retry.rules.http_5xx.base", "retry.rules.http_4xx.never"} {
			if !strings.Contains(strings.Join(paths, " "), want) {
				t.Errorf("audit changes %v lack %s", paths, want)
			}
		}

		b.must(200, "PUT", path, `{"source":"outbox","from":"*","to":"acme","target":"inbox","retry":null}`).json(t, &got)
		if got.Retry != nil || got.Ordered {
			t.Fatalf("after clearing: %+v", got)
		}

		tests := []struct {
			name, path, body string
			status           int
			code, field      string
		}{
			{"retry field named", path, `{"source":"outbox","from":"*","to":"acme","target":"inbox","retry":{"rules":{"http_5xx":{"base":"soon"}}}}`,
				400, "INVALID_INPUT", "retry.rules.http_5xx.base"},
			{"unknown class", path, `{"source":"outbox","from":"*","to":"acme","target":"inbox","retry":{"rules":{"http_600":{}}}}`,
				400, "INVALID_INPUT", "retry.rules.http_600"},
			{"never with a schedule", path, `{"source":"outbox","from":"*","to":"acme","target":"inbox","retry":{"rules":{"timeout":{"never":true,"base":"1s"}}}}`,
				400, "INVALID_INPUT", "retry.rules.timeout.never"},
			{"unknown party", path, `{"source":"outbox","from":"*","to":"nobody","target":"inbox"}`, 400, "INVALID_INPUT", "to"},
			{"source as target", path, `{"source":"outbox","from":"*","to":"*","target":"outbox"}`, 400, "INVALID_INPUT", "target"},
			{"covers another route", path, `{"source":"outbox","from":"*","to":"acme","target":"archive"}`, 409, "ROUTE_REDUNDANT", ""},
			{"no such route", fmt.Sprintf("/api/v1/routes/%d", rt.ID+100), `{"source":"outbox","from":"*","to":"acme","target":"inbox"}`, 404, "NOT_FOUND", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := b.must(tt.status, "PUT", tt.path, tt.body).errorOf(t)
				if e.Code != tt.code {
					t.Errorf("code = %s, want %s", e.Code, tt.code)
				}
				if tt.field != "" && e.Details[tt.field] == nil {
					t.Errorf("details = %v, want %s named", e.Details, tt.field)
				}
			})
		}
		b.must(200, "GET", path, "").json(t, &stored)
		if stored.To != "acme" || stored.Target != "inbox" || stored.Retry != nil {
			t.Fatalf("a refused edit was written: %+v", stored)
		}
	})
}
