package api

import (
	"net/http"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/records"
)

// providerView is an identity provider as the API shows it: the client secret only as
// whether one is set.
type providerView struct {
	Name            string    `json:"name"`
	DisplayName     string    `json:"display_name"`
	IssuerURL       string    `json:"issuer_url"`
	ClientID        string    `json:"client_id"`
	HasClientSecret bool      `json:"has_client_secret"`
	Audience        string    `json:"audience"`
	Scopes          string    `json:"scopes"`
	Enabled         bool      `json:"enabled"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func viewProvider(p persistence.IdentityProvider) providerView {
	return providerView{Name: p.Name, DisplayName: p.DisplayName, IssuerURL: p.IssuerURL, ClientID: p.ClientID,
		HasClientSecret: len(p.SealedSecret) > 0, Audience: p.Audience, Scopes: p.Scopes, Enabled: p.Enabled,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// providerInput is what a client sends; client_secret is write-only (left out, the stored
// one stays; "" removes it).
type providerInput struct {
	Name         string  `json:"name"`
	DisplayName  string  `json:"display_name"`
	IssuerURL    string  `json:"issuer_url"`
	ClientID     string  `json:"client_id"`
	ClientSecret *string `json:"client_secret"`
	Audience     string  `json:"audience"`
	Scopes       string  `json:"scopes"`
	Enabled      *bool   `json:"enabled"`
}

func (in providerInput) record() records.IdentityProviderInput {
	return records.IdentityProviderInput{Name: in.Name, DisplayName: in.DisplayName, IssuerURL: in.IssuerURL,
		ClientID: in.ClientID, ClientSecret: in.ClientSecret, Audience: in.Audience, Scopes: in.Scopes, Enabled: in.Enabled}
}

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.store.ListIdentityProviders(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]providerView, len(list))
	for i, rec := range list {
		views[i] = viewProvider(rec)
	}
	writeJSON(w, http.StatusOK, listBody("identity_providers", slicePage(views, p), len(views), p))
}

func (s *Server) createProvider(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdmin(w, r) {
		return
	}
	var in providerInput
	if err := decodeJSON(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := records.SaveIdentityProvider(r.Context(), s.store, s.sealer, "", in.record())
	if err != nil {
		s.fail(w, r, withCode(err, persistence.ErrConflict, "NAME_TAKEN"))
		return
	}
	s.providersChanged(p.IssuerURL)
	w.Header().Set("Location", "/api/v1/identity-providers/"+p.Name)
	writeJSON(w, http.StatusCreated, viewProvider(p))
}

func (s *Server) getProvider(w http.ResponseWriter, r *http.Request) {
	p, err := s.store.GetIdentityProvider(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewProvider(p))
}

func (s *Server) updateProvider(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdmin(w, r) {
		return
	}
	var in providerInput
	if err := decodeJSON(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	before, err := s.store.GetIdentityProvider(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := records.SaveIdentityProvider(r.Context(), s.store, s.sealer, name, in.record())
	if err != nil {
		s.fail(w, r, withCode(err, persistence.ErrConflict, "NAME_TAKEN"))
		return
	}
	s.providersChanged(before.IssuerURL, p.IssuerURL)
	writeJSON(w, http.StatusOK, viewProvider(p))
}

func (s *Server) deleteProvider(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdmin(w, r) {
		return
	}
	name := r.PathValue("name")
	before, err := s.store.GetIdentityProvider(r.Context(), name)
	if err == nil {
		err = s.store.DeleteIdentityProvider(r.Context(), name)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.providersChanged(before.IssuerURL)
	w.WriteHeader(http.StatusNoContent)
}

// providersChanged drops the cached discoveries of the issuers, so a corrected provider
// is tried again at once.
func (s *Server) providersChanged(issuers ...string) {
	if s.oidc == nil {
		return
	}
	for _, iss := range issuers {
		s.oidc.Forget(iss)
	}
}

// requireAdmin refuses with 403 a caller signed in as a user who is not an administrator;
// API tokens act for the installation and pass.
func (s *Server) requireAdmin(w http.ResponseWriter, r *http.Request) bool {
	return s.requireAdminFor(w, r, "identity providers")
}

// requireAdminFor is requireAdmin for the records named what.
func (s *Server) requireAdminFor(w http.ResponseWriter, r *http.Request, what string) bool {
	if role := infoOf(r.Context()).role; role != "" && role != persistence.RoleAdmin {
		s.fail(w, r, &apiError{status: http.StatusForbidden, code: "FORBIDDEN",
			message: "only administrators manage " + what})
		return false
	}
	return true
}
