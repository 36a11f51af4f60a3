package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"wharf/internal/module"
)

// ModuleAPI is what one module adds to the API: routes, their description, and its
// panel of a message's detail.
type ModuleAPI struct {
	Name    string
	Routes  []module.APIRoute
	OpenAPI []byte
	Panels  module.MessagePanels
	// Parties keeps parties its records name from being deleted; nil when none.
	Parties module.PartyReferences
}

// moduleRoutes turns the modules' routes into table entries; the core's middleware and
// error mapping serve them like its own.
func (s *Server) moduleRoutes() []route {
	var out []route
	for _, m := range s.modules {
		for _, mr := range m.Routes {
			body := bodyNone
			switch mr.Body {
			case module.BodyJSON:
				body = bodyJSON
			case module.BodyMultipart:
				body = bodyMultipart
			}
			out = append(out, route{method: mr.Method, path: mr.Path, body: body, handle: s.moduleHandler(mr.Handle)})
		}
	}
	return out
}

func (s *Server) moduleHandler(h func(r *http.Request) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status, v, err := h(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if v == nil || status == http.StatusNoContent {
			w.WriteHeader(cmpStatus(status, http.StatusNoContent))
			return
		}
		writeJSON(w, cmpStatus(status, http.StatusOK), v)
	}
}

func cmpStatus(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}

// moduleError maps a module's *module.APIError; nil when err is not one.
func moduleError(err error) *apiError {
	var me *module.APIError
	if !errors.As(err, &me) {
		return nil
	}
	return &apiError{status: me.Status, code: me.Code, message: me.Message, details: me.Details}
}

// modulePanels collects the modules' panels of a message, keyed by module name.
func (s *Server) modulePanels(r *http.Request, id int64) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, m := range s.modules {
		if m.Panels == nil {
			continue
		}
		p, ok, err := m.Panels.MessagePanel(r.Context(), id)
		if err != nil {
			return nil, fmt.Errorf("%s panel of message %d: %w", m.Name, id, err)
		}
		if !ok {
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("%s panel of message %d: %w", m.Name, id, err)
		}
		out[m.Name] = b
	}
	return out, nil
}

// MergeOpenAPI adds the fragments' paths and components.schemas to the core document;
// a path or schema named twice is an error.
func MergeOpenAPI(core []byte, fragments ...[]byte) ([]byte, error) {
	if len(fragments) == 0 {
		return core, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(core, &doc); err != nil {
		return nil, fmt.Errorf("parse the core OpenAPI document: %w", err)
	}
	root := doc.Content[0]
	paths := mapValue(root, "paths")
	schemas := mapValue(mapValue(root, "components"), "schemas")
	for i, f := range fragments {
		var frag yaml.Node
		if err := yaml.Unmarshal(f, &frag); err != nil {
			return nil, fmt.Errorf("parse OpenAPI fragment %d: %w", i, err)
		}
		if len(frag.Content) == 0 {
			continue
		}
		fr := frag.Content[0]
		if err := appendEntries(paths, mapValue(fr, "paths"), "path"); err != nil {
			return nil, err
		}
		if err := appendEntries(schemas, mapValue(mapValue(fr, "components"), "schemas"), "schema"); err != nil {
			return nil, err
		}
	}
	return yaml.Marshal(&doc)
}

// mapValue returns the mapping under key in m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func appendEntries(dst, src *yaml.Node, what string) error {
	if src == nil {
		return nil
	}
	if dst == nil {
		return fmt.Errorf("the core OpenAPI document has no %ss section", what)
	}
	for i := 0; i+1 < len(src.Content); i += 2 {
		if mapValue(dst, src.Content[i].Value) != nil {
			return fmt.Errorf("OpenAPI %s %s is described twice", what, src.Content[i].Value)
		}
		dst.Content = append(dst.Content, src.Content[i], src.Content[i+1])
	}
	return nil
}

// CheckDocumented compares routes with the operations an OpenAPI document (or fragment)
// describes: missing lists routes without a description, extra descriptions without a
// route, both as "METHOD /path". Module tests use it to hold their fragment to their routes.
func CheckDocumented(routes []module.APIRoute, doc []byte) (missing, extra []string, err error) {
	var d struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, nil, err
	}
	described := map[string]bool{}
	for p, item := range d.Paths {
		for m := range item {
			switch m {
			case "get", "put", "post", "delete", "patch":
				described[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	mounted := map[string]bool{}
	for _, r := range routes {
		k := r.Method + " " + r.Path
		mounted[k] = true
		if !described[k] {
			missing = append(missing, k)
		}
	}
	for k := range described {
		if !mounted[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra, nil
}
