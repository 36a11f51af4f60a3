package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"wharf/internal/certs"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"plugins", "plugin_type", "plugin", "plugin_form"}, (*Server).pluginRoutes)

var _ = registerFlashes(map[string]flash{
	"plugin-created": {Kind: "success", Text: "Saved. Start the instance on the services page, or name it in a route."},
	"plugin-updated": {Kind: "success", Text: "Saved. Restart the instance on the services page to apply the change."},
	"plugin-deleted": {Kind: "success", Text: "Deleted."},
	"plugin-in-use":  {Kind: "danger", Text: "Not deleted: a route names this instance. Delete those routes first."},
})

// clearPrefix names the checkbox that empties a write-only field ("clear:secret_headers"),
// since an empty write-only input keeps the stored value.
const clearPrefix = "clear:"

func (s *Server) pluginRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/plugins", http.HandlerFunc(s.pluginTypesPage)},
		{"GET /ui/plugins/{type}", http.HandlerFunc(s.pluginTypePage)},
		{"GET /ui/plugins/{type}/new", http.HandlerFunc(s.newPluginPage)},
		{"POST /ui/plugins/{type}", http.HandlerFunc(s.createPluginPage)},
		{"GET /ui/plugins/{type}/{name}", http.HandlerFunc(s.pluginPage)},
		{"GET /ui/plugins/{type}/{name}/edit", http.HandlerFunc(s.editPluginPage)},
		{"POST /ui/plugins/{type}/{name}", http.HandlerFunc(s.updatePluginPage)},
		{"POST /ui/plugins/{type}/{name}/delete", http.HandlerFunc(s.deletePluginPage)},
	}
}

func (s *Server) pluginTypesPage(w http.ResponseWriter, r *http.Request) {
	all, err := s.store.ListPluginConfigs(r.Context(), "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	count := map[persistence.PluginType]int{}
	for _, c := range all {
		count[c.Type]++
	}
	type typeRow struct {
		Type      persistence.PluginType
		Role      module.Role
		Instances int
	}
	var rows []typeRow
	for _, p := range module.Plugins() {
		rows = append(rows, typeRow{p.Type, p.Role, count[p.Type]})
	}
	s.render(w, r, http.StatusOK, "plugins", pageData{Title: "Plugins", Data: struct{ Types []typeRow }{rows}})
}

// pluginType reads the plugin type the path names; an unknown one is a 404, already answered.
func (s *Server) pluginType(w http.ResponseWriter, r *http.Request) (module.Plugin, bool) {
	p, ok := module.Lookup(persistence.PluginType(r.PathValue("type")))
	if !ok {
		s.notFound(w, r)
	}
	return p, ok
}

func (s *Server) pluginTypePage(w http.ResponseWriter, r *http.Request) {
	p, ok := s.pluginType(w, r)
	if !ok {
		return
	}
	list, err := s.store.ListPluginConfigs(r.Context(), p.Type)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "plugin_type", pageData{Title: string(p.Type), Data: struct {
		Plugin    module.Plugin
		Instances []persistence.PluginConfig
	}{p, list}})
}

// pluginField is one config field of the form and of the detail page.
type pluginField struct {
	module.FieldSpec
	ID    string // the input's id
	Label string
	Hint  string
	// Value is what the input shows: typed, stored or the default; never a write-only value.
	Value   string
	Checked bool
	Error   string
	// DescribedBy lists the ids of the hint and the error, those the field has.
	DescribedBy string
}

// certificateOption is a stored certificate a certificate field can name.
type certificateOption struct {
	ID    string
	Label string
}

// pluginForm is the new and edit form of a plugin instance: what was typed, and why it
// was refused.
type pluginForm struct {
	Plugin  module.Plugin
	Editing bool
	Name    string
	Enabled bool
	Fields  []pluginField
	// Errors are by field: name, enabled and the config's fields.
	Errors map[string]string
	// Summary lists every error above the form; errors that name no field of the form
	// show only there.
	Summary      []errorItem
	Certificates []certificateOption
	// Retry draws a target's retry policy as a table, apart from Fields.
	Retry     *retryEditor
	CSRFField string
	CSRFToken string
}

func fieldHint(f module.FieldSpec) string {
	var hints []string
	switch f.Kind {
	case module.KindDuration:
		hints = append(hints, "A duration such as 30s, 5m or 1h.")
	case module.KindMap:
		hints = append(hints, "One Name: value per line.")
	case module.KindList:
		hints = append(hints, "Values separated by commas; empty for none.")
	case module.KindIntegerList:
		hints = append(hints, "Numbers separated by commas; empty for none.")
	case module.KindCertificate:
		hints = append(hints, "A stored certificate.")
	}
	if f.WriteOnly {
		hints = append(hints, "Write-only: never shown. Leave it empty to keep what is stored.")
	} else if f.Default != "" && f.Kind != module.KindBoolean {
		hints = append(hints, "Empty takes the default, "+strings.TrimSpace(strings.ReplaceAll(f.Default, "\n", "; "))+".")
	}
	return strings.Join(hints, " ")
}

// formFields turns a type's description into form fields holding values (by field name).
func formFields(specs []module.FieldSpec, values map[string]string, errs map[string]string) []pluginField {
	out := make([]pluginField, len(specs))
	for i, f := range specs {
		pf := pluginField{FieldSpec: f, ID: "cfg-" + strings.ReplaceAll(f.Name, ".", "-"), Label: fieldLabel(f.Name),
			Hint: fieldHint(f), Error: errs[f.Name]}
		if !f.WriteOnly {
			pf.Value = values[f.Name]
		}
		if f.Kind == module.KindBoolean {
			pf.Checked = pf.Value == "true"
		}
		var ids []string
		if pf.Hint != "" {
			ids = append(ids, pf.ID+"-hint")
		}
		if pf.Error != "" {
			ids = append(ids, pf.ID+"-error")
		}
		pf.DescribedBy = strings.Join(ids, " ")
		out[i] = pf
	}
	return out
}

// defaultValues are the values of a new instance's form.
func defaultValues(specs []module.FieldSpec) map[string]string {
	out := map[string]string{}
	for _, f := range specs {
		out[f.Name] = f.Default
	}
	return out
}

// storedValues reads a stored config's public fields into form values; a field it does
// not hold is empty.
func storedValues(specs []module.FieldSpec, raw []byte) (map[string]string, error) {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("read stored config: %w", err)
	}
	out := map[string]string{}
	for _, f := range specs {
		var v any = obj
		for _, part := range strings.Split(f.Name, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[part]
		}
		switch x := v.(type) {
		case string:
			out[f.Name] = x
		case json.Number:
			out[f.Name] = x.String()
		case bool:
			out[f.Name] = strconv.FormatBool(x)
		case map[string]any:
			m := make(map[string]string, len(x))
			for k, e := range x {
				m[k] = fmt.Sprint(e)
			}
			out[f.Name] = module.FormatMap(m)
		case []any:
			items := make([]string, len(x))
			for i, e := range x {
				items[i] = fmt.Sprint(e)
			}
			out[f.Name] = strings.Join(items, ", ")
		}
	}
	return out, nil
}

// formValues are the values typed into a submitted form, write-only ones included.
func formValues(specs []module.FieldSpec, form url.Values) map[string]string {
	out := map[string]string{}
	for _, f := range specs {
		out[f.Name] = form.Get(f.Name)
		if f.Kind == module.KindBoolean {
			out[f.Name] = strconv.FormatBool(form.Get(f.Name) == "true")
		}
	}
	return out
}

// configBody builds from a submitted form the JSON object the REST API takes, so both go
// through records.SavePluginConfig, the one rule set. An empty input is left out (the
// default applies; a write-only field keeps its stored value), numbers that do not parse
// are passed on as text for the decoder to refuse naming the field, a map field is one
// "Name: value" per line and a list field's values are separated by commas or lines. The
// only refusals here are lines of a map field that are not "Name: value", by field.
func configBody(specs []module.FieldSpec, form url.Values, name string, editing bool) ([]byte, map[string]string) {
	body := map[string]any{"enabled": form.Get("enabled") == "true"}
	if !editing {
		body["name"] = name
	}
	errs := map[string]string{}
	for _, f := range specs {
		text := form.Get(f.Name)
		var v any
		switch {
		case f.Kind == module.KindBoolean:
			v = text == "true"
		case f.WriteOnly && form.Get(clearPrefix+f.Name) == "true":
			v = ""
			if f.Kind == module.KindMap {
				v = map[string]string{}
			}
		case strings.TrimSpace(text) == "":
			continue
		case f.Kind == module.KindInteger || f.Kind == module.KindCertificate || f.Kind == module.KindNumber:
			text = strings.TrimSpace(text)
			if _, err := strconv.ParseFloat(text, 64); err == nil && json.Valid([]byte(text)) {
				v = json.Number(text)
			} else {
				v = text
			}
		case f.Kind == module.KindMap:
			m, err := parseMapField(text)
			if err != nil {
				errs[f.Name] = err.Error()
				continue
			}
			v = m
		case f.Kind == module.KindList:
			v = listItems(text)
		case f.Kind == module.KindIntegerList:
			// Numbers go as numbers; anything else as text, for the decoder to refuse
			// naming the field.
			items := []any{}
			for _, item := range listItems(text) {
				if _, err := strconv.ParseInt(item, 10, 64); err == nil {
					items = append(items, json.Number(item))
				} else {
					items = append(items, item)
				}
			}
			v = items
		default:
			v = text
		}
		setPath(body, strings.Split(f.Name, "."), v)
	}
	out, err := json.Marshal(body)
	if err != nil {
		// Every value above is a string, number, bool, map or list of strings.
		panic(err)
	}
	return out, errs
}

// listItems splits a list field's text at commas and line ends, dropping empty items.
func listItems(text string) []string {
	items := []string{}
	for _, item := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

func setPath(obj map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := obj[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[p] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = v
}

func parseMapField(text string) (map[string]string, error) {
	m := map[string]string{}
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("line %d: write Name: value", i+1)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

// certificateOptions are the stored certificates a certificate field offers, each named
// by subject, expiry, role and use.
func (s *Server) certificateOptions(r *http.Request) ([]certificateOption, error) {
	choices, err := certs.Choices(r.Context(), s.store, s.now())
	if err != nil {
		return nil, err
	}
	out := make([]certificateOption, len(choices))
	for i, c := range choices {
		out[i] = certificateOption{ID: strconv.FormatInt(c.ID, 10), Label: c.Label}
	}
	return out, nil
}

func (s *Server) renderPluginForm(w http.ResponseWriter, r *http.Request, status int, f pluginForm, values map[string]string) {
	specs, err := module.Describe(f.Plugin.Type)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if f.Errors == nil {
		f.Errors = map[string]string{}
	}
	f.Fields = formFields(specs, values, f.Errors)
	f.Fields, f.Retry = splitRetryFields(f.Fields, values, f.Errors)
	known := map[string]bool{"name": true, "enabled": true}
	for _, sp := range specs {
		known[sp.Name] = true
		if sp.Kind == module.KindCertificate && f.Certificates == nil {
			if f.Certificates, err = s.certificateOptions(r); err != nil {
				s.fail(w, r, err)
				return
			}
		}
	}
	f.Summary = formSummary(f.Errors, func(field string) (string, string) {
		switch {
		case field == "name" || field == "enabled":
			return field, ""
		case known[field]:
			return "cfg-" + strings.ReplaceAll(field, ".", "-"), ""
		}
		return "", ""
	})
	f.CSRFField, f.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	title := "New " + string(f.Plugin.Type)
	if f.Editing {
		title = "Edit " + f.Name
	}
	s.render(w, r, status, "plugin_form", pageData{Title: title, Data: f})
}

func (s *Server) newPluginPage(w http.ResponseWriter, r *http.Request) {
	p, ok := s.pluginType(w, r)
	if !ok {
		return
	}
	specs, err := module.Describe(p.Type)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderPluginForm(w, r, http.StatusOK, pluginForm{Plugin: p, Enabled: true}, defaultValues(specs))
}

func (s *Server) createPluginPage(w http.ResponseWriter, r *http.Request) {
	p, ok := s.pluginType(w, r)
	if !ok {
		return
	}
	s.savePlugin(w, r, p, "")
}

// savePlugin creates (name empty) or replaces an instance from the submitted form, and
// shows the form again with the errors when it is refused.
func (s *Server) savePlugin(w http.ResponseWriter, r *http.Request, p module.Plugin, name persistence.InstanceName) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	specs, err := module.Describe(p.Type)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	editing := name != ""
	typed := strings.TrimSpace(r.PostForm.Get("name"))
	if editing {
		typed = string(name)
	}
	f := pluginForm{Plugin: p, Editing: editing, Name: typed, Enabled: r.PostForm.Get("enabled") == "true"}
	body, errs := configBody(specs, r.PostForm, typed, editing)
	if len(errs) > 0 {
		f.Errors = errs
		s.renderPluginForm(w, r, http.StatusUnprocessableEntity, f, formValues(specs, r.PostForm))
		return
	}
	rec, err := records.SavePluginConfig(r.Context(), s.store, s.sealer, p.Type, name, body)
	if err != nil {
		status := http.StatusUnprocessableEntity
		errs, ok := fieldMessages(err)
		switch {
		case ok:
		case errors.Is(err, persistence.ErrNotFound) && editing:
			s.notFound(w, r)
			return
		case errors.Is(err, persistence.ErrConflict):
			errs, status = map[string]string{"name": "An instance with this name already exists."}, http.StatusConflict
		default:
			s.fail(w, r, err)
			return
		}
		f.Errors = errs
		s.renderPluginForm(w, r, status, f, formValues(specs, r.PostForm))
		return
	}
	s.routesChanged(r)
	if editing {
		setFlash(w, "plugin-updated")
	} else {
		setFlash(w, "plugin-created")
	}
	http.Redirect(w, r, "/ui/plugins/"+string(rec.Type)+"/"+string(rec.Name), http.StatusSeeOther)
}

// storedInstance is an instance the path names with its plugin, the description of its
// config fields and their stored values, as the detail and edit pages show them.
type storedInstance struct {
	rec    persistence.PluginConfig
	plugin module.Plugin
	specs  []module.FieldSpec
	values map[string]string
}

// loadStoredInstance reads the instance the path names and its stored values; false when
// the page is already answered.
func (s *Server) loadStoredInstance(w http.ResponseWriter, r *http.Request) (storedInstance, bool) {
	rec, ok := s.loadInstance(w, r)
	if !ok {
		return storedInstance{}, false
	}
	p, _ := module.Lookup(rec.Type)
	specs, err := module.Describe(rec.Type)
	if err != nil {
		s.fail(w, r, err)
		return storedInstance{}, false
	}
	values, err := storedValues(specs, rec.Config)
	if err != nil {
		s.fail(w, r, err)
		return storedInstance{}, false
	}
	return storedInstance{rec, p, specs, values}, true
}

func (s *Server) pluginPage(w http.ResponseWriter, r *http.Request) {
	in, ok := s.loadStoredInstance(w, r)
	if !ok {
		return
	}
	rec := in.rec
	s.render(w, r, http.StatusOK, "plugin", pageData{Title: string(rec.Name), Data: struct {
		Plugin    module.Plugin
		Instance  persistence.PluginConfig
		Fields    []pluginField
		Created   string
		Updated   string
		CSRFField string
		CSRFToken string
	}{in.plugin, rec, setRetryRules(formFields(in.specs, in.values, nil)), rec.CreatedAt.UTC().Format(time.RFC3339),
		rec.UpdatedAt.UTC().Format(time.RFC3339), session.CSRFField, sessionCSRFToken(r)}})
}

func (s *Server) editPluginPage(w http.ResponseWriter, r *http.Request) {
	in, ok := s.loadStoredInstance(w, r)
	if !ok {
		return
	}
	s.renderPluginForm(w, r, http.StatusOK, pluginForm{Plugin: in.plugin, Editing: true, Name: string(in.rec.Name),
		Enabled: in.rec.Enabled}, in.values)
}

func (s *Server) updatePluginPage(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.loadInstance(w, r)
	if !ok {
		return
	}
	p, _ := module.Lookup(rec.Type)
	s.savePlugin(w, r, p, rec.Name)
}

func (s *Server) deletePluginPage(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.loadInstance(w, r)
	if !ok {
		return
	}
	path := "/ui/plugins/" + string(rec.Type)
	err := s.store.DeletePluginConfig(r.Context(), rec.Name)
	switch {
	case errors.Is(err, persistence.ErrInUse):
		setFlash(w, "plugin-in-use")
		http.Redirect(w, r, path+"/"+string(rec.Name), http.StatusSeeOther)
		return
	case errors.Is(err, persistence.ErrNotFound):
		s.notFound(w, r)
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	// As the REST API does: the instance is gone, so are its certificate uses.
	if err := records.ReleaseCertificates(r.Context(), s.store, rec.Name); err != nil {
		s.log.WarnContext(r.Context(), "release the certificates of a deleted instance", "instance", string(rec.Name), "err", err)
	}
	s.routesChanged(r)
	setFlash(w, "plugin-deleted")
	http.Redirect(w, r, path, http.StatusSeeOther)
}
