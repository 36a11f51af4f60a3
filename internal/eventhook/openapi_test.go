package eventhook

import (
	"testing"

	"wharf/internal/api"
	"wharf/internal/module"
)

// TestRoutesAreDocumented holds the module's OpenAPI fragment equal to its routes.
func TestRoutesAreDocumented(t *testing.T) {
	rt := New(module.Core{})
	missing, extra, err := api.CheckDocumented(rt.APIRoutes(), openAPI)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("routes without a description: %v; descriptions without a route: %v", missing, extra)
	}
	if _, err := api.MergeOpenAPI(api.CoreOpenAPI(), openAPI); err != nil {
		t.Fatalf("the fragment does not merge into the core document: %v", err)
	}
}
