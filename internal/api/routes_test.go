package api

import (
	"fmt"
	"testing"

	"wharf/internal/persistence"
)

func TestRoutes(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		before := b.ops.changes()

		var rt persistence.Route
		r := b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"local","to":"acme","target":"inbox"}`)
		r.json(t, &rt)
		if rt.ID == 0 || rt.Source != "outbox" || rt.From != "local" || rt.To != "acme" || rt.Target != "inbox" || rt.Ordered {
			t.Errorf("created %+v", rt)
		}
		if loc := r.header.Get("Location"); loc != fmt.Sprintf("/api/v1/routes/%d", rt.ID) {
			t.Errorf("Location = %q", loc)
		}
		if b.ops.changes() != before+1 {
			t.Error("RoutesChanged not called on create")
		}
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"*","to":"*","target":"archive","ordered":true}`)

		var got persistence.Route
		b.must(200, "GET", fmt.Sprintf("/api/v1/routes/%d", rt.ID), "").json(t, &got)
		if got.ID != rt.ID || got.Target != "inbox" {
			t.Errorf("get %+v", got)
		}
		var list struct {
			Routes []persistence.Route `json:"routes"`
			Total  int                 `json:"total"`
		}
		b.must(200, "GET", "/api/v1/routes", "").json(t, &list)
		if list.Total != 2 || len(list.Routes) != 2 {
			t.Errorf("list %+v", list)
		}

		tests := []struct {
			name, body string
			status     int
			code       string
			field      string
		}{
			{"missing source instance", `{"source":"nope","from":"*","to":"*","target":"inbox"}`, 400, "INVALID_INPUT", "source"},
			{"missing target instance", `{"source":"outbox","from":"*","to":"*","target":"nope"}`, 400, "INVALID_INPUT", "target"},
			{"target as source", `{"source":"inbox","from":"*","to":"*","target":"archive"}`, 400, "INVALID_INPUT", "source"},
			{"source as target", `{"source":"outbox","from":"*","to":"*","target":"outbox"}`, 400, "INVALID_INPUT", "target"},
			{"unknown party", `{"source":"outbox","from":"local","to":"nobody","target":"inbox"}`, 400, "INVALID_INPUT", "to"},
			{"invalid pattern", `{"source":"outbox","from":"Local","to":"*","target":"inbox"}`, 400, "INVALID_INPUT", "from"},
			{"missing fields", `{}`, 400, "INVALID_INPUT", "source"},
			{"unknown field", `{"source":"outbox","from":"*","to":"*","target":"inbox","priority":1}`, 400, "INVALID_INPUT", "priority"},
			{"ordered not a boolean", `{"source":"outbox","from":"*","to":"*","target":"inbox","ordered":"yes"}`, 400, "INVALID_INPUT", "ordered"},
			{"same route", `{"source":"outbox","from":"local","to":"acme","target":"inbox"}`, 409, "ROUTE_REDUNDANT", ""},
			{"covers an existing route", `{"source":"outbox","from":"*","to":"acme","target":"inbox"}`, 409, "ROUTE_REDUNDANT", ""},
			{"covered by an existing route", `{"source":"outbox","from":"local","to":"acme","target":"archive"}`, 409, "ROUTE_REDUNDANT", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := b.must(tt.status, "POST", "/api/v1/routes", tt.body).errorOf(t)
				if e.Code != tt.code {
					t.Errorf("code = %s, want %s", e.Code, tt.code)
				}
				if tt.field != "" && e.Details[tt.field] == nil {
					t.Errorf("details = %v, want %s named", e.Details, tt.field)
				}
				if tt.code == "ROUTE_REDUNDANT" && e.Details["route_id"] == nil {
					t.Errorf("details = %v, want route_id", e.Details)
				}
			})
		}
		b.must(200, "GET", "/api/v1/routes", "").json(t, &list)
		if list.Total != 2 {
			t.Errorf("refused routes were written: %+v", list)
		}

		// A party or instance a route names cannot be deleted.
		if e := b.must(409, "DELETE", "/api/v1/partners/acme", "").errorOf(t); e.Code != "PARTY_IN_USE" {
			t.Errorf("delete party in use: %s", e.Code)
		}
		if e := b.must(409, "DELETE", "/api/v1/plugins/configs/file-writer/inbox", "").errorOf(t); e.Code != "INSTANCE_IN_USE" {
			t.Errorf("delete instance in use: %s", e.Code)
		}

		before = b.ops.changes()
		b.must(204, "DELETE", fmt.Sprintf("/api/v1/routes/%d", rt.ID), "")
		if b.ops.changes() != before+1 {
			t.Error("RoutesChanged not called on delete")
		}
		b.must(404, "GET", fmt.Sprintf("/api/v1/routes/%d", rt.ID), "")
		b.must(404, "DELETE", fmt.Sprintf("/api/v1/routes/%d", rt.ID), "")
		if e := b.must(400, "GET", "/api/v1/routes/abc", "").errorOf(t); e.Details["id"] == nil {
			t.Errorf("bad id: %+v", e)
		}
		b.must(400, "GET", "/api/v1/routes/0", "")
		b.must(204, "DELETE", "/api/v1/partners/acme", "")
	})
}
