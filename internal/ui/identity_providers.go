package ui

import (
	"errors"
	"net/http"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"identity_providers", "identity_provider", "identity_provider_form"}, (*Server).providerRoutes)

var _ = registerFlashes(map[string]flash{
	"provider-created": {Kind: "success", Text: "Saved. The sign-in page offers this provider while it is enabled."},
	"provider-updated": {Kind: "success", Text: "Saved."},
	"provider-deleted": {Kind: "success", Text: "Deleted. Users it created stay; they cannot sign in through it any more."},
})

// providerRoutes lists the identity provider pages; every one is for administrators only.
func (s *Server) providerRoutes() []pageRoute {
	admin := func(h http.HandlerFunc) http.Handler { return s.adminOnly(h) }
	return []pageRoute{
		{"GET /ui/identity-providers", admin(s.providersPage)},
		{"GET /ui/identity-providers/new", admin(s.newProviderPage)},
		{"POST /ui/identity-providers", admin(s.saveProviderPage(false))},
		{"GET /ui/identity-providers/{name}", admin(s.providerPage)},
		{"GET /ui/identity-providers/{name}/edit", admin(s.editProviderPage)},
		{"POST /ui/identity-providers/{name}", admin(s.saveProviderPage(true))},
		{"POST /ui/identity-providers/{name}/delete", admin(s.deleteProviderPage)},
	}
}

// providerForm is the new and edit form: what was typed (never the secret), and why it
// was refused.
type providerForm struct {
	Editing                                                  bool
	Name, DisplayName, IssuerURL, ClientID, Audience, Scopes string
	Enabled, HasSecret                                       bool
	CallbackURL                                              string
	Errors                                                   map[string]string
	CSRFField, CSRFToken                                     string
}

func (s *Server) providersPage(w http.ResponseWriter, r *http.Request) {
	list, err := s.store.ListIdentityProviders(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "identity_providers", pageData{Title: "Identity providers", Data: struct {
		Providers   []persistence.IdentityProvider
		CallbackURL string
	}{list, s.callbackURL(r)}})
}

func (s *Server) newProviderPage(w http.ResponseWriter, r *http.Request) {
	s.renderProviderForm(w, r, http.StatusOK, providerForm{Enabled: true, Scopes: "profile email"})
}

func (s *Server) renderProviderForm(w http.ResponseWriter, r *http.Request, status int, f providerForm) {
	f.CSRFField, f.CSRFToken, f.CallbackURL = session.CSRFField, sessionCSRFToken(r), s.callbackURL(r)
	title := "New identity provider"
	if f.Editing {
		title = "Edit " + f.Name
	}
	s.render(w, r, status, "identity_provider_form", pageData{Title: title, Data: f})
}

// loadProvider reads the provider the path names; an unknown name is a 404, answered.
func (s *Server) loadProvider(w http.ResponseWriter, r *http.Request) (persistence.IdentityProvider, bool) {
	p, err := s.store.GetIdentityProvider(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return p, false
	}
	return p, true
}

func (s *Server) providerPage(w http.ResponseWriter, r *http.Request) {
	p, ok := s.loadProvider(w, r)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "identity_provider", pageData{Title: p.DisplayName, Data: struct {
		Provider             persistence.IdentityProvider
		HasSecret            bool
		Created, Updated     string
		CallbackURL          string
		CSRFField, CSRFToken string
	}{p, len(p.SealedSecret) > 0, p.CreatedAt.UTC().Format(time.RFC3339), p.UpdatedAt.UTC().Format(time.RFC3339),
		s.callbackURL(r), session.CSRFField, sessionCSRFToken(r)}})
}

func (s *Server) editProviderPage(w http.ResponseWriter, r *http.Request) {
	p, ok := s.loadProvider(w, r)
	if !ok {
		return
	}
	s.renderProviderForm(w, r, http.StatusOK, providerForm{Editing: true, Name: p.Name, DisplayName: p.DisplayName,
		IssuerURL: p.IssuerURL, ClientID: p.ClientID, Audience: p.Audience, Scopes: p.Scopes, Enabled: p.Enabled,
		HasSecret: len(p.SealedSecret) > 0})
}

// saveProviderPage creates a provider, or updates the one the path names. An empty secret
// field keeps the stored secret; "Remove the stored secret" makes the client public.
func (s *Server) saveProviderPage(editing bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var stored persistence.IdentityProvider
		name := ""
		if editing {
			var ok bool
			if stored, ok = s.loadProvider(w, r); !ok {
				return
			}
			name = stored.Name
		}
		if err := r.ParseForm(); err != nil {
			badForm(w, err)
			return
		}
		form := r.PostForm
		enabled := form.Get("enabled") == "true"
		in := records.IdentityProviderInput{Name: form.Get("name"), DisplayName: form.Get("display_name"),
			IssuerURL: form.Get("issuer_url"), ClientID: form.Get("client_id"), Audience: form.Get("audience"),
			Scopes: form.Get("scopes"), Enabled: &enabled}
		if sec := form.Get("client_secret"); sec != "" {
			in.ClientSecret = &sec
		} else if form.Get("clear_client_secret") == "true" || !editing {
			in.ClientSecret = &sec
		}
		p, err := records.SaveIdentityProvider(r.Context(), s.store, s.sealer, name, in)
		if errors.Is(err, persistence.ErrNotFound) {
			s.notFound(w, r)
			return
		}
		if err != nil {
			errs, ok := fieldMessages(err)
			if !ok && errors.Is(err, persistence.ErrConflict) {
				errs, ok = map[string]string{"name": "A provider with this name or issuer URL already exists."}, true
				if editing {
					errs = map[string]string{"issuer_url": "Another provider has this issuer URL."}
				}
			}
			if !ok {
				s.fail(w, r, err)
				return
			}
			f := providerForm{Editing: editing, Name: in.Name, DisplayName: in.DisplayName, IssuerURL: in.IssuerURL,
				ClientID: in.ClientID, Audience: in.Audience, Scopes: in.Scopes, Enabled: enabled,
				HasSecret: len(stored.SealedSecret) > 0, Errors: errs}
			if editing {
				f.Name = stored.Name
			}
			s.renderProviderForm(w, r, http.StatusUnprocessableEntity, f)
			return
		}
		if s.oidc != nil {
			// A corrected provider is discovered again at once.
			s.oidc.Forget(stored.IssuerURL)
			s.oidc.Forget(p.IssuerURL)
		}
		if editing {
			setFlash(w, "provider-updated")
		} else {
			setFlash(w, "provider-created")
		}
		http.Redirect(w, r, "/ui/identity-providers/"+p.Name, http.StatusSeeOther)
	}
}

func (s *Server) deleteProviderPage(w http.ResponseWriter, r *http.Request) {
	p, ok := s.loadProvider(w, r)
	if !ok {
		return
	}
	err := s.store.DeleteIdentityProvider(r.Context(), p.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.oidc != nil {
		s.oidc.Forget(p.IssuerURL)
	}
	setFlash(w, "provider-deleted")
	http.Redirect(w, r, "/ui/identity-providers", http.StatusSeeOther)
}
