package api

import (
	"net/http"

	"wharf/internal/persistence"
	"wharf/internal/records"
)

// tokenInput creates an API token; target scopes it to one target instance, whose
// deliveries it may then only complete and fail.
type tokenInput struct {
	Name   string `json:"name"`
	Target string `json:"target"`
}

// createdToken is the answer of a creation: the record and the token, shown this once.
type createdToken struct {
	persistence.APIToken
	Token string `json:"token"`
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	toks, err := s.store.ListAPITokens(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if toks == nil {
		toks = []persistence.APIToken{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": toks})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdminFor(w, r, "API tokens") {
		return
	}
	var in tokenInput
	if err := decodeJSON(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	rec, token, err := records.CreateAPIToken(r.Context(), s.store, in.Name, in.Target)
	if err != nil {
		s.fail(w, r, withCode(err, persistence.ErrConflict, "NAME_TAKEN"))
		return
	}
	writeJSON(w, http.StatusCreated, createdToken{APIToken: rec, Token: token})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdminFor(w, r, "API tokens") {
		return
	}
	if err := decodeNoBody(r); err != nil {
		s.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	if err := s.store.RevokeAPIToken(r.Context(), name); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
