package ui

import (
	"errors"
	"net/http"
	"strings"

	"wharf/internal/auth/apitoken"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"tokens", "token_created"}, (*Server).tokenRoutes)

var _ = registerFlashes(map[string]flash{
	"token-revoked": {Kind: "success", Text: "Token revoked; requests that carry it are refused from now on."},
})

// tokenRoutes lists the API tokens page. Anyone signed in sees the list; only
// administrators create or revoke, because a token carries the whole REST API, settings
// included, which operators may not change.
func (s *Server) tokenRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/tokens", http.HandlerFunc(s.tokensPage)},
		{"POST /ui/tokens", s.adminOnly(http.HandlerFunc(s.createTokenPage))},
		{"POST /ui/tokens/{name}/revoke", s.adminOnly(http.HandlerFunc(s.revokeTokenPage))},
	}
}

// tokenRow is a token as the list shows it.
type tokenRow struct {
	Name, Created, LastUsed, Revoked string
}

func (s *Server) tokensPage(w http.ResponseWriter, r *http.Request) {
	s.renderTokens(w, r, http.StatusOK, "", nil)
}

func (s *Server) renderTokens(w http.ResponseWriter, r *http.Request, status int, name string, errs map[string]string) {
	toks, err := s.store.ListAPITokens(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows := make([]tokenRow, len(toks))
	for i, t := range toks {
		rows[i] = tokenRow{Name: t.Name, Created: formatTime(&t.CreatedAt), LastUsed: formatTime(t.LastUsedAt), Revoked: formatTime(t.RevokedAt)}
	}
	s.render(w, r, status, "tokens", pageData{Title: "API tokens", Data: struct {
		Tokens    []tokenRow
		Admin     bool
		Name      string
		Errors    map[string]string
		CSRFField string
		CSRFToken string
	}{rows, isAdmin(r), name, errs, session.CSRFField, sessionCSRFToken(r)}})
}

// createTokenPage creates a token as wharf tokens create does and shows it in this response
// only: the store keeps its hash.
func (s *Server) createTokenPage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	rec, token, err := apitoken.Create(r.Context(), s.store, name)
	if err != nil {
		msg := ""
		if errs, ok := fieldMessages(err); ok {
			msg = sentence(errs["name"])
		} else if errors.Is(err, persistence.ErrConflict) {
			msg = "A token with this name already exists, revoked or not; choose another name."
		} else {
			s.fail(w, r, err)
			return
		}
		s.renderTokens(w, r, http.StatusUnprocessableEntity, name, map[string]string{"name": msg})
		return
	}
	s.log.InfoContext(r.Context(), "API token created", "token", rec.Name, "by", currentUser(r).Name)
	s.render(w, r, http.StatusOK, "token_created", pageData{Title: "API token created", Data: struct {
		Name, Token string
	}{rec.Name, token}})
}

func (s *Server) revokeTokenPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	err := s.store.RevokeAPIToken(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "API token revoked", "token", name, "by", currentUser(r).Name)
	setFlash(w, "token-revoked")
	http.Redirect(w, r, "/ui/tokens", http.StatusSeeOther)
}
