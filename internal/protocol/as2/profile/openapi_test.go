package profile

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"wharf/internal/api"
)

// openAPIDoc is the part of an OpenAPI document these tests read.
type openAPIDoc struct {
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Components map[string]map[string]yaml.Node `yaml:"components"`
}

func readOpenAPI(t *testing.T, path string) (openAPIDoc, []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return doc, raw
}

// TestOpenAPIDocumentsRoutes holds the module's OpenAPI fragment and Routes equal for the
// profile paths, with an operationId and responses on every operation.
func TestOpenAPIDocumentsRoutes(t *testing.T) {
	doc, _ := readOpenAPI(t, "../openapi.yaml")
	mounted := map[string]bool{}
	for _, rt := range (&Store{}).Routes() {
		mounted[rt.Method+" "+rt.Path] = true
	}
	// The module's other routes (under a remote profile, say) are described in the same
	// fragment and held to their own routes by their own tests.
	own := []string{LocalProfilesPath, LocalProfilesPath + "/{organization}", RemoteProfilesPath, RemoteProfilesPath + "/{partner}"}
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}
	documented := map[string]bool{}
	ids := map[string]bool{}
	for path, item := range doc.Paths {
		if !slices.Contains(own, path) {
			continue
		}
		for key, node := range item {
			if !slices.Contains(methods, key) {
				continue
			}
			var op struct {
				OperationID string         `yaml:"operationId"`
				Responses   map[string]any `yaml:"responses"`
			}
			if err := node.Decode(&op); err != nil {
				t.Fatal(err)
			}
			k := strings.ToUpper(key) + " " + path
			documented[k] = true
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s: operationId %q missing or used twice", k, op.OperationID)
			}
			ids[op.OperationID] = true
			if len(op.Responses) == 0 {
				t.Errorf("%s has no responses", k)
			}
			if !mounted[k] {
				t.Errorf("%s is documented but not mounted", k)
			}
		}
	}
	for k := range mounted {
		if !documented[k] {
			t.Errorf("%s is mounted but not documented", k)
		}
	}
}

// TestOpenAPIReferencesResolve holds every $ref of the fragment to a component of its own
// or of the core's document, which it joins.
func TestOpenAPIReferencesResolve(t *testing.T) {
	doc, raw := readOpenAPI(t, "../openapi.yaml")
	core, _ := readOpenAPI(t, "../../../api/openapi.yaml")
	for section := range doc.Components {
		if section != "schemas" {
			t.Errorf("components.%s: the core merges only paths and components.schemas", section)
		}
	}
	refs := regexp.MustCompile(`\$ref: "#/components/([A-Za-z]+)/([A-Za-z0-9]+)"`).FindAllStringSubmatch(string(raw), -1)
	if len(refs) < 10 {
		t.Fatalf("only %d references found; the pattern is broken", len(refs))
	}
	for _, m := range refs {
		section, name := m[1], m[2]
		_, own := doc.Components[section][name]
		_, theirs := core.Components[section][name]
		if !own && !theirs {
			t.Errorf("#/components/%s/%s is defined neither here nor in the core's document", section, name)
		}
		if own && theirs {
			t.Errorf("#/components/%s/%s is defined here and in the core's document", section, name)
		}
	}
	if strings.Contains(string(raw), "$ref: '") {
		t.Error("write references in double quotes, so this test sees them")
	}
}

// TestOpenAPIAS2IDPattern holds the documented pattern to ParseAS2ID.
func TestOpenAPIAS2IDPattern(t *testing.T) {
	doc, _ := readOpenAPI(t, "../openapi.yaml")
	var schema struct {
		Pattern   string `yaml:"pattern"`
		MaxLength int    `yaml:"maxLength"`
	}
	node := doc.Components["schemas"]["AS2ID"]
	if err := node.Decode(&schema); err != nil || schema.Pattern == "" {
		t.Fatalf("AS2ID schema: %+v, %v", schema, err)
	}
	re := regexp.MustCompile(schema.Pattern)
	for _, s := range []string{"A", "WHARF", "Acme Corp", "a!#$%&'()*+,-./:;<=>?@[]^_`{|}~z", "", " A", "A ", `A"B`, `A\B`, "A\tB", "AÉ", "A\x7f"} {
		_, err := ParseAS2ID(s)
		if re.MatchString(s) != (err == nil) {
			t.Errorf("%q: pattern matches %v, ParseAS2ID error %v", s, re.MatchString(s), err)
		}
	}
	if schema.MaxLength != MaxAS2IDLength {
		t.Errorf("maxLength = %d", schema.MaxLength)
	}
}

// TestOpenAPIMerges holds the fragment to what the core's merge accepts, and the merged
// document to the profile routes.
func TestOpenAPIMerges(t *testing.T) {
	core, err := os.ReadFile("../../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	frag, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	merged, err := api.MergeOpenAPI(core, frag)
	if err != nil {
		t.Fatal(err)
	}
	missing, _, err := api.CheckDocumented((&Store{}).Routes(), merged)
	if err != nil || len(missing) > 0 {
		t.Errorf("routes missing from the merged document: %v, %v", missing, err)
	}
}
