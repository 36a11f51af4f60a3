package ui

import (
	"net/http"

	"wharf/internal/records"
	"wharf/internal/settings"
	"wharf/internal/storage"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"settings"}, (*Server).settingsRoutes)

var _ = registerFlashes(map[string]flash{
	"settings-saved": {Kind: "success", Text: "Settings saved; they apply at once, payload storage at the next start."},
})

// settingsRoutes lists the settings page: everyone signed in reads it, administrators edit.
func (s *Server) settingsRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/settings", http.HandlerFunc(s.settingsPage)},
		{"POST /ui/settings", s.adminOnly(http.HandlerFunc(s.saveSettingsPage))},
	}
}

// settingRow is one setting of the catalogue with its value as shown (or as typed).
type settingRow struct {
	Key, Label, Description, Default, Value, Error string
	Optional                                       bool
}

func (s *Server) settingsPage(w http.ResponseWriter, r *http.Request) {
	cur, err := records.CurrentSettings(r.Context(), s.store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderSettings(w, r, http.StatusOK, cur, nil)
}

func (s *Server) renderSettings(w http.ResponseWriter, r *http.Request, status int, values, errs map[string]string) {
	s.renderSettingsWith(w, r, status, values, errs, nil)
}

// renderSettingsWith renders the page with the result of a storage test, if any.
func (s *Server) renderSettingsWith(w http.ResponseWriter, r *http.Request, status int, values, errs map[string]string, probe *storage.ProbeResult) {
	var rows []settingRow
	for _, c := range settings.Catalogue() {
		rows = append(rows, settingRow{Key: c.Key, Label: c.Label, Description: c.Description, Default: c.Default,
			Value: values[c.Key], Error: errs[c.Key], Optional: c.Optional})
	}
	summary := formSummary(errs, func(key string) (string, string) {
		for _, row := range rows {
			if row.Key == key {
				return key, row.Label
			}
		}
		return "", ""
	})
	s.render(w, r, status, "settings", pageData{Title: "Settings", Data: struct {
		Settings  []settingRow
		Summary   []errorItem
		Admin     bool
		CSRFField string
		CSRFToken string
		Storage   *storageCard
	}{rows, summary, isAdmin(r), session.CSRFField, sessionCSRFToken(r), s.storageCard(r, probe)}})
}

// saveSettingsPage writes the settings whose value differs from the current one, through
// the same validation as the REST API: a refusal writes nothing and shows what was typed.
func (s *Server) saveSettingsPage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	cur, err := records.CurrentSettings(r.Context(), s.store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	typed := make(map[string]string, len(cur))
	changed := map[string]string{}
	for k, v := range cur {
		typed[k] = v
		if !r.PostForm.Has(k) {
			continue
		}
		typed[k] = r.PostForm.Get(k)
		if typed[k] != v {
			changed[k] = typed[k]
		}
	}
	if err := records.UpdateSettings(r.Context(), s.store, changed); err != nil {
		errs, ok := fieldMessages(err)
		if !ok {
			s.fail(w, r, err)
			return
		}
		for k, m := range errs {
			errs[k] = sentence(m)
		}
		s.renderSettings(w, r, http.StatusUnprocessableEntity, typed, errs)
		return
	}
	if len(changed) > 0 {
		s.zone.changed()
		if s.settingsChanged != nil {
			s.settingsChanged(r.Context())
		}
		s.log.InfoContext(r.Context(), "settings changed", "keys", len(changed), "by", currentUser(r).Name)
	}
	setFlash(w, "settings-saved")
	http.Redirect(w, r, "/ui/settings", http.StatusSeeOther)
}
