package ui

import (
	"errors"
	"net/http"
	"strings"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// A module's part of an organization's or partner's page (the AS2 profile) comes through
// module.PartyPanels: the module describes the panel, its form and its actions, checks
// what is submitted by its own rules, and the UI renders and routes it.

var _ = registerPages([]string{"party_panel_form"}, (*Server).partyPanelRoutes)

var _ = registerFlashes(map[string]flash{
	"panel-saved": {Kind: "success", Text: "Saved."},
})

func (s *Server) partyPanelRoutes() []pageRoute {
	var out []pageRoute
	for _, p := range []partyPages{organizationPages, partnerPages} {
		base := p.Path + "/{name}/panels/{module}"
		out = append(out,
			pageRoute{"GET " + base + "/edit", s.panelFormPage(p)},
			pageRoute{"POST " + base, s.savePanelPage(p)},
			pageRoute{"POST " + base + "/actions/{action}", s.panelActionPage(p)},
			pageRoute{"GET " + base + "/downloads/{download}", s.panelDownloadPage(p)},
		)
	}
	return out
}

// panelView is one panel as the party page shows it.
type panelView struct {
	module.PartyPanel
	// Path is the panel's base URL: Path+"/edit" is its form, Path+"/actions/NAME" an action.
	Path   string
	Result *module.ActionResult
}

// panelViews collects the modules' panels of a party; result belongs to resultModule's.
func (s *Server) panelViews(r *http.Request, p partyPages, name persistence.PartyName, resultModule string,
	result *module.ActionResult) ([]panelView, error) {
	var out []panelView
	for _, m := range s.partyPanels {
		panel, ok, err := m.PartyPanel(r.Context(), p.Kind, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		v := panelView{PartyPanel: panel, Path: p.Path + "/" + string(name) + "/panels/" + panel.Module}
		if panel.Module == resultModule {
			v.Result = result
		}
		out = append(out, v)
	}
	return out, nil
}

// loadPanel finds the party and the module's panel the path names; anything missing is a
// 404, already answered.
func (s *Server) loadPanel(w http.ResponseWriter, r *http.Request, p partyPages) (persistence.Party, module.PartyPanels, module.PartyPanel, bool) {
	party, ok := s.loadParty(w, r, p)
	if !ok {
		return persistence.Party{}, nil, module.PartyPanel{}, false
	}
	for _, m := range s.partyPanels {
		panel, ok, err := m.PartyPanel(r.Context(), p.Kind, party.Name)
		if err != nil {
			s.fail(w, r, err)
			return persistence.Party{}, nil, module.PartyPanel{}, false
		}
		if ok && panel.Module == r.PathValue("module") {
			return party, m, panel, true
		}
	}
	s.notFound(w, r)
	return persistence.Party{}, nil, module.PartyPanel{}, false
}

// panelForm is the panel's edit form: the fields with what was typed, and why it was refused.
type panelForm struct {
	Pages  partyPages
	Party  persistence.Party
	Panel  module.PartyPanel
	Path   string
	Errors map[string]string
	// Groups are the panel's fields in their parts of the form.
	Groups []fieldGroup
	// Summary lists every error above the form; one naming no field of the panel shows
	// only there.
	Summary   []errorItem
	CSRFField string
	CSRFToken string
}

func (s *Server) renderPanelForm(w http.ResponseWriter, r *http.Request, status int, f panelForm) {
	f.CSRFField, f.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	f.Groups = fieldGroups(f.Panel.Fields, f.Errors)
	f.Summary = formSummary(f.Errors, func(field string) (string, string) {
		for _, pf := range f.Panel.Fields {
			if pf.Name == field {
				return "f-" + field, pf.Label
			}
		}
		return "", ""
	})
	f.Path = f.Pages.Path + "/" + string(f.Party.Name) + "/panels/" + f.Panel.Module
	s.render(w, r, status, "party_panel_form", pageData{Title: f.Panel.Title + " of " + string(f.Party.Name), Data: f})
}

func (s *Server) panelFormPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, _, panel, ok := s.loadPanel(w, r, p)
		if !ok {
			return
		}
		s.renderPanelForm(w, r, http.StatusOK, panelForm{Pages: p, Party: party, Panel: panel})
	})
}

func (s *Server) savePanelPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, m, panel, ok := s.loadPanel(w, r, p)
		if !ok {
			return
		}
		if err := r.ParseForm(); err != nil {
			badForm(w, err)
			return
		}
		err := m.SavePartyPanel(r.Context(), p.Kind, party.Name, r.PostForm)
		if err != nil {
			errs, isField := fieldMessages(err)
			if !isField {
				s.fail(w, r, err)
				return
			}
			// Shown again as typed; panel fields never hold secrets.
			for i, f := range panel.Fields {
				panel.Fields[i].Value = r.PostForm.Get(f.Name)
				if f.Multiple {
					panel.Fields[i].Value = strings.Join(r.PostForm[f.Name], ", ")
				}
				if f.Kind == module.FieldCheckbox && panel.Fields[i].Value != "" {
					panel.Fields[i].Value = "true"
				}
			}
			s.renderPanelForm(w, r, http.StatusUnprocessableEntity, panelForm{Pages: p, Party: party, Panel: panel, Errors: errs})
			return
		}
		setFlash(w, "panel-saved")
		http.Redirect(w, r, p.Path+"/"+string(party.Name), http.StatusSeeOther)
	})
}

// unplacedErrors moves the errors of fields a form does not show (the body, a nested
// key) under "", which the form shows above its fields.
func unplacedErrors(errs map[string]string, fields []module.PanelField) map[string]string {
	shown := map[string]bool{}
	for _, f := range fields {
		shown[f.Name] = true
	}
	out := map[string]string{}
	for k, v := range errs {
		if !shown[k] {
			if out[""] != "" {
				continue
			}
			if k != "" {
				v = k + ": " + v
			}
			k = ""
		}
		out[k] = v
	}
	return out
}

func (s *Server) panelActionPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, m, panel, ok := s.loadPanel(w, r, p)
		if !ok {
			return
		}
		action := r.PathValue("action")
		offered := false
		for _, a := range panel.Actions {
			offered = offered || a.Name == action
		}
		if !offered {
			s.notFound(w, r)
			return
		}
		res, err := m.RunPartyAction(r.Context(), p.Kind, party.Name, action, messageActor(r))
		var fe *persistence.FieldError
		switch {
		case errors.As(err, &fe):
			res = module.ActionResult{Summary: fe.Message}
		case errors.Is(err, persistence.ErrNotFound):
			s.notFound(w, r)
			return
		case err != nil:
			s.fail(w, r, err)
			return
		}
		// The result is shown here rather than after a redirect: it is not stored anywhere.
		s.renderParty(w, r, http.StatusOK, p, party, panel.Module, &res)
	})
}
