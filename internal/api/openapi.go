package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument describes every route of the table in routes; a test holds them equal.
//
//go:embed openapi.yaml
var openAPIDocument []byte

// openAPI serves the document without authentication: it describes the API, not the
// installation, and clients generate their code from it before they hold a token.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(s.document)
}

// CoreOpenAPI is the core's document before modules add their fragments.
func CoreOpenAPI() []byte { return openAPIDocument }
