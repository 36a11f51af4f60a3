package ui

import (
	"errors"
	"net/http"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

// partyPages is organizations or partners: the same pages and rules, two collections.
type partyPages struct {
	Kind     persistence.PartyKind
	Path     string // "/ui/organizations"
	Plural   string // "Organizations"
	Singular string // "organization"
	Taken    string // the refusal of a name already in use
}

var (
	organizationPages = partyPages{Kind: persistence.PartyOrganization, Path: "/ui/organizations",
		Plural: "Organizations", Singular: "organization", Taken: "An organization with this name already exists."}
	partnerPages = partyPages{Kind: persistence.PartyPartner, Path: "/ui/partners",
		Plural: "Partners", Singular: "partner", Taken: "A partner with this name already exists."}
)

var _ = registerPages([]string{"parties", "party", "party_form"}, (*Server).partyRoutes)

var _ = registerFlashes(map[string]flash{
	"party-created": {Kind: "success", Text: "Saved. The new party can be named in routes."},
	"party-updated": {Kind: "success", Text: "Saved."},
	"party-deleted": {Kind: "success", Text: "Deleted."},
	"party-in-use":  {Kind: "danger", Text: "Not deleted: a route names this party. Delete those routes first."},
})

// partyRoutes lists the organization and partner pages.
func (s *Server) partyRoutes() []pageRoute {
	var out []pageRoute
	for _, p := range []partyPages{organizationPages, partnerPages} {
		out = append(out,
			pageRoute{"GET " + p.Path, s.listPartiesPage(p)},
			pageRoute{"GET " + p.Path + "/new", s.newPartyPage(p)},
			pageRoute{"POST " + p.Path, s.createPartyPage(p)},
			pageRoute{"GET " + p.Path + "/{name}", s.partyPage(p)},
			pageRoute{"GET " + p.Path + "/{name}/edit", s.editPartyPage(p)},
			pageRoute{"POST " + p.Path + "/{name}", s.updatePartyPage(p)},
			pageRoute{"POST " + p.Path + "/{name}/delete", s.deletePartyPage(p)},
		)
	}
	return out
}

// partyForm is the new and edit form: what was typed, and why it was refused.
type partyForm struct {
	Pages       partyPages
	Editing     bool
	Name        string
	DisplayName string
	Errors      map[string]string
	CSRFField   string
	CSRFToken   string
}

func sessionCSRFToken(r *http.Request) string {
	if sess, ok := session.FromContext(r.Context()); ok {
		return sess.CSRFToken
	}
	return ""
}

func (s *Server) listPartiesPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Parties are few; one page of the store's maximum lists them all.
		list, total, err := s.store.ListParties(r.Context(), p.Kind, persistence.ListOptions{Limit: 1000})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		health, err := s.partyHealth(r.Context(), p, list)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.render(w, r, http.StatusOK, "parties", pageData{Title: p.Plural, Data: struct {
			Pages   partyPages
			Parties []persistence.Party
			Total   int
			Health  map[persistence.PartyName]partnerHealth
		}{p, list, total, health}})
	})
}

func (s *Server) newPartyPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wz, _ := s.partnerWizard(); wz != nil && p.Kind == persistence.PartyPartner && !r.URL.Query().Has("basic") {
			s.wizardStartPage(w, r, wz)
			return
		}
		s.renderPartyForm(w, r, http.StatusOK, partyForm{Pages: p})
	})
}

func (s *Server) renderPartyForm(w http.ResponseWriter, r *http.Request, status int, f partyForm) {
	f.CSRFField, f.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	title := "New " + f.Pages.Singular
	if f.Editing {
		title = "Edit " + f.Name
	}
	s.render(w, r, status, "party_form", pageData{Title: title, Data: f})
}

func (s *Server) createPartyPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			badForm(w, err)
			return
		}
		in := records.PartyInput{Name: r.PostForm.Get("name"), DisplayName: r.PostForm.Get("display_name")}
		created, err := records.CreateParty(r.Context(), s.store, p.Kind, in)
		if err != nil {
			errs, ok := fieldMessages(err)
			if !ok && errors.Is(err, persistence.ErrConflict) {
				errs, ok = map[string]string{"name": p.Taken}, true
			}
			if !ok {
				s.fail(w, r, err)
				return
			}
			s.renderPartyForm(w, r, http.StatusUnprocessableEntity,
				partyForm{Pages: p, Name: in.Name, DisplayName: in.DisplayName, Errors: errs})
			return
		}
		s.routesChanged(r)
		setFlash(w, "party-created")
		http.Redirect(w, r, p.Path+"/"+string(created.Name), http.StatusSeeOther)
	})
}

// loadParty reads the party the path names; an invalid or unknown name is a 404, already answered.
func (s *Server) loadParty(w http.ResponseWriter, r *http.Request, p partyPages) (persistence.Party, bool) {
	name, err := persistence.ParsePartyName(r.PathValue("name"))
	if err != nil {
		s.notFound(w, r)
		return persistence.Party{}, false
	}
	party, err := s.store.GetParty(r.Context(), p.Kind, name)
	if err != nil {
		s.fail(w, r, err)
		return persistence.Party{}, false
	}
	return party, true
}

func (s *Server) partyPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, ok := s.loadParty(w, r, p)
		if !ok {
			return
		}
		s.renderParty(w, r, http.StatusOK, p, party, "", nil)
	})
}

// renderParty shows a party's page; result, when set, is what the named module's panel
// action found.
func (s *Server) renderParty(w http.ResponseWriter, r *http.Request, status int, p partyPages, party persistence.Party,
	resultModule string, result *module.ActionResult) {
	s.renderPartyWith(w, r, status, p, party, resultModule, result, nil)
}

// renderPartyWith is renderParty with a refused pause form (partner_pause.go).
func (s *Server) renderPartyWith(w http.ResponseWriter, r *http.Request, status int, p partyPages, party persistence.Party,
	resultModule string, result *module.ActionResult, refusedPause *pauseCard) {
	all, err := s.store.ListRoutes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Routes name parties without their kind, so a route naming this name names this party.
	var routes []persistence.Route
	for _, rt := range all {
		if string(rt.From) == string(party.Name) || string(rt.To) == string(party.Name) {
			routes = append(routes, rt)
		}
	}
	panels, err := s.panelViews(r, p, party.Name, resultModule, result)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var overview *partnerOverview
	if p.Kind == persistence.PartyPartner {
		o, err := s.partnerOverviewOf(r.Context(), party.Name, s.now())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		o.Pause = pauseCardOf(r, o.Health.PartnerActivity, refusedPause)
		overview = &o
	}
	s.render(w, r, status, "party", pageData{Title: string(party.Name), Data: struct {
		Pages     partyPages
		Party     persistence.Party
		Created   string
		Updated   string
		Routes    []persistence.Route
		Panels    []panelView
		CSRFField string
		CSRFToken string
		Overview  *partnerOverview
	}{p, party, party.CreatedAt.UTC().Format(time.RFC3339), party.UpdatedAt.UTC().Format(time.RFC3339),
		routes, panels, session.CSRFField, sessionCSRFToken(r), overview}})
}

func (s *Server) editPartyPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, ok := s.loadParty(w, r, p)
		if !ok {
			return
		}
		s.renderPartyForm(w, r, http.StatusOK, partyForm{Pages: p, Editing: true,
			Name: string(party.Name), DisplayName: party.DisplayName})
	})
}

func (s *Server) updatePartyPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, ok := s.loadParty(w, r, p)
		if !ok {
			return
		}
		if err := r.ParseForm(); err != nil {
			badForm(w, err)
			return
		}
		in := records.PartyInput{DisplayName: r.PostForm.Get("display_name")}
		_, err := records.UpdateParty(r.Context(), s.store, p.Kind, party.Name, in)
		if errors.Is(err, persistence.ErrNotFound) {
			s.notFound(w, r)
			return
		}
		if err != nil {
			errs, ok := fieldMessages(err)
			if !ok {
				s.fail(w, r, err)
				return
			}
			s.renderPartyForm(w, r, http.StatusUnprocessableEntity, partyForm{Pages: p, Editing: true,
				Name: string(party.Name), DisplayName: in.DisplayName, Errors: errs})
			return
		}
		s.routesChanged(r)
		setFlash(w, "party-updated")
		http.Redirect(w, r, p.Path+"/"+string(party.Name), http.StatusSeeOther)
	})
}

func (s *Server) deletePartyPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, ok := s.loadParty(w, r, p)
		if !ok {
			return
		}
		err := s.partyReferenced(r.Context(), p.Kind, party.Name)
		if err == nil {
			err = s.store.DeleteParty(r.Context(), p.Kind, party.Name)
		}
		switch {
		case errors.Is(err, persistence.ErrInUse):
			setFlash(w, "party-in-use")
			http.Redirect(w, r, p.Path+"/"+string(party.Name), http.StatusSeeOther)
			return
		case errors.Is(err, persistence.ErrNotFound):
			s.notFound(w, r)
			return
		case err != nil:
			s.fail(w, r, err)
			return
		}
		s.routesChanged(r)
		setFlash(w, "party-deleted")
		http.Redirect(w, r, p.Path, http.StatusSeeOther)
	})
}

// routesChanged reloads the route cache, when the gateway gave the UI its actions.
func (s *Server) routesChanged(r *http.Request) {
	if s.actions != nil {
		s.actions.RoutesChanged(r.Context())
	}
}
