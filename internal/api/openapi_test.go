package api

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// operation is the part of an OpenAPI operation the tests read.
type operation struct {
	OperationID string                 `yaml:"operationId"`
	Security    *[]map[string][]string `yaml:"security"`
	Responses   map[string]any         `yaml:"responses"`
}

// documentedOperations parses openapi.yaml into "METHOD /path" → operation.
func documentedOperations(t *testing.T) map[string]operation {
	t.Helper()
	var doc struct {
		OpenAPI    string                          `yaml:"openapi"`
		Security   []map[string][]string           `yaml:"security"`
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			SecuritySchemes map[string]struct {
				Type   string `yaml:"type"`
				Scheme string `yaml:"scheme"`
			} `yaml:"securitySchemes"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if b := doc.Components.SecuritySchemes["bearer"]; b.Type != "http" || b.Scheme != "bearer" {
		t.Errorf("bearer security scheme = %+v", b)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearer"] == nil {
		t.Errorf("document-wide security = %v, want bearer", doc.Security)
	}
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}
	ops := map[string]operation{}
	ids := map[string]string{}
	for path, item := range doc.Paths {
		for key, node := range item {
			if !slices.Contains(methods, key) {
				continue // parameters, summary, …
			}
			var op operation
			if err := node.Decode(&op); err != nil {
				t.Fatalf("%s %s: %v", key, path, err)
			}
			k := strings.ToUpper(key) + " " + path
			if len(op.Responses) == 0 {
				t.Errorf("%s has no responses", k)
			}
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", k)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s used by %s and %s", op.OperationID, other, k)
			}
			ids[op.OperationID] = k
			ops[k] = op
		}
	}
	return ops
}

// TestEveryRouteIsDocumented holds the OpenAPI document and the route table equal: every
// mounted (method, path) is described, and every described operation is mounted.
func TestEveryRouteIsDocumented(t *testing.T) {
	documented := documentedOperations(t)
	mounted := map[string]bool{}
	for _, rt := range (&Server{}).routes() {
		if mounted[rt.pattern()] {
			t.Errorf("route %s listed twice", rt.pattern())
		}
		mounted[rt.pattern()] = true
		if _, ok := documented[rt.pattern()]; !ok {
			t.Errorf("route %s is mounted but not in openapi.yaml", rt.pattern())
		}
	}
	for k := range documented {
		if !mounted[k] {
			t.Errorf("openapi.yaml describes %s, which is not mounted", k)
		}
	}
}

// TestPublicRoutesAreDeclaredPublic checks that the document's operations without
// authentication are exactly the routes mounted without a token check, and that every
// authenticated one documents its 401.
func TestPublicRoutesAreDeclaredPublic(t *testing.T) {
	documented := documentedOperations(t)
	for _, rt := range (&Server{}).routes() {
		op, ok := documented[rt.pattern()]
		if !ok {
			continue // TestEveryRouteIsDocumented reports it
		}
		docPublic := op.Security != nil && len(*op.Security) == 0
		if docPublic != rt.public {
			t.Errorf("%s: public in the table = %v, in the document = %v", rt.pattern(), rt.public, docPublic)
		}
		if _, has401 := op.Responses["401"]; !rt.public && !has401 {
			t.Errorf("%s requires a token but documents no 401", rt.pattern())
		}
		if _, has415 := op.Responses["415"]; rt.body != bodyNone && !has415 {
			t.Errorf("%s takes a body but documents no 415", rt.pattern())
		}
	}
}

// TestOpenAPIReferencesResolve checks that every $ref names a component that exists.
func TestOpenAPIReferencesResolve(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "$ref" {
					ref, _ := c.(string)
					if !resolves(doc, ref) {
						t.Errorf("$ref %q does not resolve", ref)
					}
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
}

func resolves(doc map[string]any, ref string) bool {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var cur any = doc
	for _, seg := range strings.Split(rest, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}
