package ui

import (
	"errors"
	"net/http"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/records"
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
	Name, Target, Created, LastUsed, Revoked string
}

func (s *Server) tokensPage(w http.ResponseWriter, r *http.Request) {
	s.renderTokens(w, r, http.StatusOK, "", "", nil)
}

func (s *Server) renderTokens(w http.ResponseWriter, r *http.Request, status int, name, target string, errs map[string]string) {
	toks, err := s.store.ListAPITokens(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_, targets, err := s.instancesByRole(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows := make([]tokenRow, len(toks))
	for i, t := range toks {
		rows[i] = tokenRow{Name: t.Name, Target: string(t.Target), Created: formatTime(&t.CreatedAt),
			LastUsed: formatTime(t.LastUsedAt), Revoked: formatTime(t.RevokedAt)}
	}
	s.render(w, r, status, "tokens", pageData{Title: "API tokens", Data: struct {
		Tokens    []tokenRow
		Admin     bool
		Name      string
		Target    string
		Targets   []persistence.InstanceName
		Errors    map[string]string
		CSRFField string
		CSRFToken string
	}{rows, isAdmin(r), name, target, targets, errs, session.CSRFField, sessionCSRFToken(r)}})
}

// createTokenPage creates a token as wharf tokens create does and shows it in this response
// only: the store keeps its hash.
func (s *Server) createTokenPage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	target := strings.TrimSpace(r.PostForm.Get("target"))
	rec, token, err := records.CreateAPIToken(r.Context(), s.store, name, target)
	if err != nil {
		errs, ok := fieldMessages(err)
		switch {
		case ok:
			for k, v := range errs {
				errs[k] = sentence(v)
			}
		case errors.Is(err, persistence.ErrConflict):
			errs = map[string]string{"name": "A token with this name already exists, revoked or not; choose another name."}
		default:
			s.fail(w, r, err)
			return
		}
		s.renderTokens(w, r, http.StatusUnprocessableEntity, name, target, errs)
		return
	}
	s.log.InfoContext(r.Context(), "API token created", "token", rec.Name, "target", string(rec.Target), "by", currentUser(r).Name)
	s.render(w, r, http.StatusOK, "token_created", pageData{Title: "API token created", Data: struct {
		Name, Token, Target string
	}{rec.Name, token, string(rec.Target)}})
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
