package ui

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// The partner wizard is the guided "new partner" flow of a module that offers one
// (module.PartnerWizard, the AS2 module): the partner with the module's records and its
// certificate in one form, then a security preset, then the module's tools (connection
// check, test message) one page each, ending on the partner's page. Each step is one form
// submission; whatever a step wrote is stored, so the flow can be left and resumed from
// the partner's page.

var _ = registerPages([]string{"partner_wizard"}, (*Server).partnerWizardRoutes)

// wizardUploadLimit bounds the first step's body: a profile file and a certificate.
const wizardUploadLimit = 2<<20 + 64<<10

// wizardFileLimit bounds one uploaded file of the first step.
const wizardFileLimit = 1 << 20

func (s *Server) partnerWizardRoutes() []pageRoute {
	base := partnerPages.Path + "/{name}/setup"
	return []pageRoute{
		{"POST " + partnerPages.Path + "/new", withBodyLimit(wizardUploadLimit, http.HandlerFunc(s.wizardCreatePage))},
		{"GET " + base + "/security", http.HandlerFunc(s.wizardSecurityPage)},
		{"POST " + base + "/security", http.HandlerFunc(s.wizardApplyPresetPage)},
		{"GET " + base + "/{tool}", http.HandlerFunc(s.wizardToolPage)},
		{"POST " + base + "/{tool}", http.HandlerFunc(s.wizardRunToolPage)},
		{"GET " + base + "/progress/{id}", http.HandlerFunc(s.wizardProgressFragment)},
	}
}

// partnerWizard is the module that guides new partners, with its party panels; nil when
// no module offers a wizard.
func (s *Server) partnerWizard() (module.PartnerWizard, module.PartyPanels) {
	for _, m := range s.partyPanels {
		if wz, ok := m.(module.PartnerWizard); ok {
			return wz, m
		}
	}
	return nil, nil
}

// wizardStep is one entry of the step list at the top of each page.
type wizardStep struct {
	Label   string
	Href    string
	Current bool
}

// wizardPage is one page of the wizard.
type wizardPage struct {
	// Step is "partner", "security" or a tool's name.
	Step    string
	Steps   []wizardStep
	Partner string
	// The partner step: what was typed, and why it was refused.
	Name        string
	DisplayName string
	Fields      []module.PanelField
	Errors      map[string]string
	// The security step.
	Presets []module.WizardPreset
	Chosen  string
	// A tool step.
	Tool      module.PanelAction
	Result    *module.ActionResult
	Progress  *wizardProgress
	Next      string
	NextLabel string
	CSRFField string
	CSRFToken string
}

func (s *Server) renderWizard(w http.ResponseWriter, r *http.Request, status int, wz module.PartnerWizard, pg wizardPage) {
	pg.CSRFField, pg.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	pg.Steps = wizardSteps(wz, pg.Partner, pg.Step)
	title := "New partner"
	if pg.Partner != "" {
		title = "Set up " + pg.Partner
	}
	s.render(w, r, status, "partner_wizard", pageData{Title: title, Data: pg})
}

// wizardSteps lists the steps; those after the first link once the partner exists.
func wizardSteps(wz module.PartnerWizard, partner, current string) []wizardStep {
	steps := []wizardStep{{Label: "Partner", Current: current == "partner"}}
	base := partnerPages.Path + "/" + partner + "/setup/"
	steps = append(steps, wizardStep{Label: "Security", Href: base + "security", Current: current == "security"})
	for _, t := range wz.WizardTools() {
		steps = append(steps, wizardStep{Label: t.Label, Href: base + t.Name, Current: current == t.Name})
	}
	if partner == "" {
		for i := range steps {
			steps[i].Href = ""
		}
	}
	return steps
}

// wizardStartPage is the first step, the "new partner" page.
func (s *Server) wizardStartPage(w http.ResponseWriter, r *http.Request, wz module.PartnerWizard) {
	presets := wz.WizardPresets()
	s.renderWizard(w, r, http.StatusOK, wz, wizardPage{Step: "partner", Fields: wz.WizardFields(), Presets: presets, Chosen: presets[0].Name})
}

// knownPreset reports whether name is one of the presets offered.
func knownPreset(presets []module.WizardPreset, name string) bool {
	for _, p := range presets {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (s *Server) wizardCreatePage(w http.ResponseWriter, r *http.Request) {
	wz, _ := s.partnerWizard()
	if wz == nil {
		s.notFound(w, r)
		return
	}
	fields := wz.WizardFields()
	form, files, err := readWizardForm(r, fields)
	if err != nil {
		badForm(w, err)
		return
	}
	// The first page offers the preset too, so a partner from a profile file takes one
	// submission to its connection check; a form without one goes to the preset step.
	presets := wz.WizardPresets()
	preset := form.Get("preset")
	refuse := func(errs map[string]string) {
		// Typed values are shown again; a browser never refills a file input.
		for i, f := range fields {
			if f.Kind != module.FieldFile {
				fields[i].Value = form.Get(f.Name)
			} else if len(files[f.Name]) > 0 && errs[f.Name] == "" {
				errs[f.Name] = "Choose the file again: a refused form cannot keep it."
			}
		}
		shown := append([]module.PanelField{{Name: "name"}, {Name: "display_name"}, {Name: "preset"}}, fields...)
		s.renderWizard(w, r, http.StatusUnprocessableEntity, wz, wizardPage{Step: "partner", Fields: fields,
			Name: form.Get("name"), DisplayName: form.Get("display_name"), Presets: presets, Chosen: preset,
			Errors: unplacedErrors(errs, shown)})
	}
	if preset != "" && !knownPreset(presets, preset) {
		refuse(map[string]string{"preset": "Choose one of the security presets shown."})
		return
	}
	name, err := wz.WizardCreate(r.Context(), form, files)
	if err != nil {
		errs, isField := fieldMessages(err)
		if !isField {
			s.fail(w, r, err)
			return
		}
		refuse(errs)
		return
	}
	s.routesChanged(r)
	next := partnerPages.Path + "/" + string(name) + "/setup/security"
	if preset != "" {
		if err := wz.WizardApplyPreset(r.Context(), name, preset); err != nil {
			s.fail(w, r, fmt.Errorf("apply preset %s to %s: %w", preset, name, err))
			return
		}
		next = wizardAfterPreset(wz, name)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// wizardAfterPreset is the page after the preset: the first tool, else the partner's page.
func wizardAfterPreset(wz module.PartnerWizard, partner persistence.PartyName) string {
	next := partnerPages.Path + "/" + string(partner)
	if tools := wz.WizardTools(); len(tools) > 0 {
		next += "/setup/" + tools[0].Name
	}
	return next
}

// readWizardForm reads the first step's multipart form: its text values, and each file
// field's file (absent when none was chosen).
func readWizardForm(r *http.Request, fields []module.PanelField) (url.Values, map[string][]byte, error) {
	if err := r.ParseMultipartForm(wizardUploadLimit); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return nil, nil, err
	}
	files := map[string][]byte{}
	for _, f := range fields {
		if f.Kind != module.FieldFile {
			continue
		}
		file, _, err := r.FormFile(f.Name)
		if errors.Is(err, http.ErrMissingFile) || errors.Is(err, http.ErrNotMultipart) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(io.LimitReader(file, wizardFileLimit+1))
		file.Close()
		if err != nil {
			return nil, nil, err
		}
		if len(data) > wizardFileLimit {
			return nil, nil, &http.MaxBytesError{Limit: wizardFileLimit}
		}
		if len(data) > 0 {
			files[f.Name] = data
		}
	}
	return r.PostForm, files, nil
}

// loadWizardPartner reads the partner the path names, for a module with a wizard; any
// missing piece is a 404, already answered.
func (s *Server) loadWizardPartner(w http.ResponseWriter, r *http.Request) (module.PartnerWizard, module.PartyPanels, persistence.Party, bool) {
	wz, panels := s.partnerWizard()
	if wz == nil {
		s.notFound(w, r)
		return nil, nil, persistence.Party{}, false
	}
	party, ok := s.loadParty(w, r, partnerPages)
	return wz, panels, party, ok
}

func (s *Server) wizardSecurityPage(w http.ResponseWriter, r *http.Request) {
	wz, _, party, ok := s.loadWizardPartner(w, r)
	if !ok {
		return
	}
	presets := wz.WizardPresets()
	s.renderWizard(w, r, http.StatusOK, wz, wizardPage{Step: "security", Partner: string(party.Name),
		Presets: presets, Chosen: presets[0].Name})
}

func (s *Server) wizardApplyPresetPage(w http.ResponseWriter, r *http.Request) {
	wz, _, party, ok := s.loadWizardPartner(w, r)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	preset := r.PostForm.Get("preset")
	if err := wz.WizardApplyPreset(r.Context(), party.Name, preset); err != nil {
		errs, isField := fieldMessages(err)
		if !isField {
			s.fail(w, r, err)
			return
		}
		presets := wz.WizardPresets()
		s.renderWizard(w, r, http.StatusUnprocessableEntity, wz, wizardPage{Step: "security", Partner: string(party.Name),
			Presets: presets, Chosen: preset, Errors: unplacedErrors(errs, []module.PanelField{{Name: "preset"}})})
		return
	}
	http.Redirect(w, r, wizardAfterPreset(wz, party.Name), http.StatusSeeOther)
}

// wizardTool finds the tool step the path names, and the page after it.
func wizardTool(wz module.PartnerWizard, partner persistence.PartyName, name string) (tool module.PanelAction, next, nextLabel string, ok bool) {
	tools := wz.WizardTools()
	for i, t := range tools {
		if t.Name != name {
			continue
		}
		if i+1 < len(tools) {
			return t, partnerPages.Path + "/" + string(partner) + "/setup/" + tools[i+1].Name, "Next: " + tools[i+1].Label, true
		}
		return t, partnerPages.Path + "/" + string(partner), "Finish: go to " + string(partner), true
	}
	return module.PanelAction{}, "", "", false
}

// loadWizardTool reads the partner and the tool step the path names, as the step's page
// without a result; any missing piece is a 404, already answered.
func (s *Server) loadWizardTool(w http.ResponseWriter, r *http.Request) (wizardPage, module.PartnerWizard, module.PartyPanels, bool) {
	wz, panels, party, ok := s.loadWizardPartner(w, r)
	if !ok {
		return wizardPage{}, nil, nil, false
	}
	tool, next, nextLabel, ok := wizardTool(wz, party.Name, r.PathValue("tool"))
	if !ok {
		s.notFound(w, r)
		return wizardPage{}, nil, nil, false
	}
	return wizardPage{Step: tool.Name, Partner: string(party.Name), Tool: tool, Next: next, NextLabel: nextLabel}, wz, panels, true
}

func (s *Server) wizardToolPage(w http.ResponseWriter, r *http.Request) {
	pg, wz, _, ok := s.loadWizardTool(w, r)
	if !ok {
		return
	}
	if id, err := strconv.ParseInt(r.URL.Query().Get("message"), 10, 64); err == nil && id > 0 {
		if pg.Progress, ok = s.wizardProgress(w, r, persistence.PartyName(pg.Partner), id); !ok {
			return
		}
	}
	s.renderWizard(w, r, http.StatusOK, wz, pg)
}

func (s *Server) wizardRunToolPage(w http.ResponseWriter, r *http.Request) {
	pg, wz, panels, ok := s.loadWizardTool(w, r)
	if !ok {
		return
	}
	partner := persistence.PartyName(pg.Partner)
	res, err := panels.RunPartyAction(r.Context(), persistence.PartyPartner, partner, pg.Tool.Name, messageActor(r))
	var fe *persistence.FieldError
	switch {
	case errors.As(err, &fe):
		res = module.ActionResult{Summary: fe.Message}
	case err != nil:
		s.fail(w, r, err)
		return
	}
	if res.MessageID != 0 {
		// The message is followed on a page of its own, so a reload does not send again.
		http.Redirect(w, r, partnerPages.Path+"/"+pg.Partner+"/setup/"+pg.Tool.Name+"?message="+strconv.FormatInt(res.MessageID, 10), http.StatusSeeOther)
		return
	}
	pg.Result = &res
	s.renderWizard(w, r, http.StatusOK, wz, pg)
}
