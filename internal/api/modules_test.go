package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
)

const gadgetFragment = `
paths:
  /api/v1/gadgets/{id}:
    get:
      operationId: getGadget
      responses:
        "200": {description: the gadget}
    put:
      operationId: putGadget
      responses:
        "200": {description: the gadget}
components:
  schemas:
    Gadget:
      type: object
`

type gadgetPanels struct{}

func (gadgetPanels) MessagePanel(_ context.Context, id int64) (any, bool, error) {
	return map[string]any{"seen": id}, id%2 == 0, nil
}

func gadgetModule() ModuleAPI {
	return ModuleAPI{
		Name: "gadget",
		Routes: []module.APIRoute{
			{Method: "GET", Path: "/api/v1/gadgets/{id}", Handle: func(r *http.Request) (int, any, error) {
				id, err := PathID(r, "id")
				switch {
				case err != nil:
					return 0, nil, err
				case id == 7:
					return 0, nil, &module.APIError{Status: http.StatusConflict, Code: "GADGET_BUSY", Message: "gadget 7 is busy"}
				case id == 8:
					return 0, nil, fmt.Errorf("gadget 8: %w", persistence.ErrNotFound)
				}
				return 0, map[string]any{"id": id, "by": Actor(r)}, nil
			}},
			{Method: "PUT", Path: "/api/v1/gadgets/{id}", Body: module.BodyJSON, Handle: func(r *http.Request) (int, any, error) {
				var in struct {
					Name string `json:"name"`
				}
				if err := DecodeJSON(r, &in); err != nil {
					return 0, nil, err
				}
				return http.StatusCreated, in, nil
			}},
		},
		OpenAPI: []byte(gadgetFragment),
		Panels:  gadgetPanels{},
	}
}

func TestModuleRoutes(t *testing.T) {
	b := setupWith(t, dbtest.SQLite(t), []ModuleAPI{gadgetModule()})
	var got map[string]any
	b.must(http.StatusOK, "GET", "/api/v1/gadgets/3", "").json(t, &got)
	if got["id"] != float64(3) || got["by"] != "token:tester" {
		t.Fatalf("GET gadget = %v", got)
	}
	if e := b.must(http.StatusConflict, "GET", "/api/v1/gadgets/7", "").errorOf(t); e.Code != "GADGET_BUSY" {
		t.Fatalf("module error = %+v", e)
	}
	b.must(http.StatusNotFound, "GET", "/api/v1/gadgets/8", "")
	b.must(http.StatusUnauthorized, "GET", "/api/v1/gadgets/3", "", withoutHeader("Authorization"))
	b.must(http.StatusUnsupportedMediaType, "PUT", "/api/v1/gadgets/3", `{"name":"x"}`, withContentType("text/plain"))
	if e := b.must(http.StatusBadRequest, "PUT", "/api/v1/gadgets/3", `{"nome":"x"}`).errorOf(t); e.Details["nome"] == nil {
		t.Fatalf("unknown field not named: %+v", e)
	}
	b.must(http.StatusCreated, "PUT", "/api/v1/gadgets/3", `{"name":"x"}`)
}

func TestModuleOpenAPIMerged(t *testing.T) {
	b := setupWith(t, dbtest.SQLite(t), []ModuleAPI{gadgetModule()})
	r := b.must(http.StatusOK, "GET", "/api/v1/openapi.yaml", "")
	var doc struct {
		Paths      map[string]map[string]any `yaml:"paths"`
		Components struct {
			Schemas map[string]any `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Paths["/api/v1/gadgets/{id}"]["put"] == nil || doc.Paths["/api/v1/routes"]["get"] == nil {
		t.Fatalf("merged document lacks module or core paths")
	}
	if doc.Components.Schemas["Gadget"] == nil {
		t.Fatalf("merged document lacks the module's schema")
	}
	missing, extra, err := CheckDocumented(gadgetModule().Routes, []byte(r.body))
	if err != nil || len(missing) > 0 {
		t.Fatalf("CheckDocumented: missing %v, %v", missing, err)
	}
	if len(extra) == 0 {
		t.Fatal("the core's operations should count as extra against the module's routes")
	}
	if _, err := MergeOpenAPI(openAPIDocument, []byte(gadgetFragment), []byte(gadgetFragment)); err == nil || !strings.Contains(err.Error(), "described twice") {
		t.Fatalf("a path described twice merged: %v", err)
	}
}

func TestModulePanelsInMessageDetail(t *testing.T) {
	b := setupWith(t, dbtest.SQLite(t), []ModuleAPI{gadgetModule()})
	b.seed()
	ids := map[bool]int64{}
	for len(ids) < 2 {
		m := b.sendTo(t, "inbox", "local", "acme", "a.txt", "hello").ID
		ids[m%2 == 0] = m
	}
	for even, id := range ids {
		var d struct {
			Protocols map[string]map[string]any `json:"protocols"`
		}
		b.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/messages/%d", id), "").json(t, &d)
		if p, ok := d.Protocols["gadget"]; ok != even || (ok && p["seen"] != float64(id)) {
			t.Fatalf("message %d: protocols = %v", id, d.Protocols)
		}
	}
}
