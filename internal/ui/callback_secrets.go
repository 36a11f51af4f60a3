package ui

import (
	"fmt"
	"net/http"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"callback_secrets", "callback_secret_created"}, (*Server).callbackSecretRoutes)

var _ = registerFlashes(map[string]flash{
	"callback-secret-revoked": {Kind: "success", Text: "Secret revoked; callbacks signed with it are refused from now on."},
})

// callbackSecretRoutes are a target instance's status callback secrets. Anyone signed in
// sees the list; only administrators generate or revoke, as with API tokens.
func (s *Server) callbackSecretRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/plugins/{type}/{name}/callback-secrets", http.HandlerFunc(s.callbackSecretsPage)},
		{"POST /ui/plugins/{type}/{name}/callback-secrets", s.adminOnly(http.HandlerFunc(s.createCallbackSecretPage))},
		{"POST /ui/plugins/{type}/{name}/callback-secrets/{id}/revoke", s.adminOnly(http.HandlerFunc(s.revokeCallbackSecretPage))},
	}
}

// loadCallbackTarget reads the target instance the path names; anything else is a 404,
// already answered.
func (s *Server) loadCallbackTarget(w http.ResponseWriter, r *http.Request) (persistence.PluginConfig, bool) {
	rec, ok := s.loadInstance(w, r)
	if !ok {
		return rec, false
	}
	if p, _ := module.Lookup(rec.Type); p.Role != module.RoleTarget {
		s.notFound(w, r)
		return rec, false
	}
	return rec, true
}

func (s *Server) callbackSecretsPage(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.loadCallbackTarget(w, r)
	if !ok {
		return
	}
	secs, err := s.store.ListCallbackSecrets(r.Context(), rec.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "callback_secrets", pageData{Title: "Callback secrets of " + string(rec.Name), Data: struct {
		Instance  persistence.PluginConfig
		Secrets   []persistence.CallbackSecret
		Admin     bool
		CSRFField string
		CSRFToken string
	}{rec, secs, isAdmin(r), session.CSRFField, sessionCSRFToken(r)}})
}

// createCallbackSecretPage generates a secret and shows it in this response only: the
// store keeps it sealed.
func (s *Server) createCallbackSecretPage(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.loadCallbackTarget(w, r)
	if !ok {
		return
	}
	sec, secret, err := records.CreateCallbackSecret(r.Context(), s.store, s.sealer, string(rec.Name))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "callback secret created", "target", string(rec.Name), "secret_id", sec.ID, "by", currentUser(r).Name)
	s.render(w, r, http.StatusOK, "callback_secret_created", pageData{Title: "Callback secret created", Data: struct {
		Instance persistence.PluginConfig
		ID       int64
		Secret   string
	}{rec, sec.ID, secret}})
}

func (s *Server) revokeCallbackSecretPage(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.loadCallbackTarget(w, r)
	if !ok {
		return
	}
	var id int64
	if _, err := fmt.Sscan(r.PathValue("id"), &id); err != nil || id <= 0 {
		s.notFound(w, r)
		return
	}
	if err := s.store.RevokeCallbackSecret(r.Context(), rec.Name, id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "callback secret revoked", "target", string(rec.Name), "secret_id", id, "by", currentUser(r).Name)
	setFlash(w, "callback-secret-revoked")
	http.Redirect(w, r, fmt.Sprintf("/ui/plugins/%s/%s/callback-secrets", rec.Type, rec.Name), http.StatusSeeOther)
}
