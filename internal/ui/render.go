package ui

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"
	"wharf/internal/ui/static"
)

//go:embed templates
var templateFiles embed.FS

// views are the pages; each is parsed with the layout, once, at start-up. Page groups
// add theirs with registerPages.
var views = []string{"not_found", "setup", "setup_done", "sign_in", "sign_in_code", "home"}

// routeGroups are the signed-in page groups, one per file, added with registerPages.
var routeGroups []func(*Server) []pageRoute

// registerPages adds a page group: the views its handlers render and its routes. Groups
// call it from a package-level var, so each file keeps its pages beside its handlers.
func registerPages(groupViews []string, routes func(*Server) []pageRoute) bool {
	for _, v := range groupViews {
		for _, have := range views {
			if have == v {
				panic("view " + v + " registered twice")
			}
		}
	}
	views = append(views, groupViews...)
	routeGroups = append(routeGroups, routes)
	return true
}

var funcs = template.FuncMap{
	"static":      static.URL,
	"csrfField":   func() string { return session.CSRFField },
	"filterInput": newFilterInput,
	"textField":   newTextField,
	"sendParties": newPartySelect,
	"displayTime": displayTime,
	"machineTime": machineTime,
	"displayDay":  displayDay,
}

// filterInput is one text field of a list page's filter form, drawn by the
// "filter-input" template: its element id is filter-<ID>, its error the one errs holds
// under Name.
type filterInput struct {
	ID, Name, Type, Label, Value, Placeholder, Error string
}

func newFilterInput(id, name, typ, label, value, placeholder string, errs map[string]string) filterInput {
	return filterInput{ID: id, Name: name, Type: typ, Label: label, Value: value, Placeholder: placeholder, Error: errs[name]}
}

func parsePages() (map[string]*template.Template, error) {
	pages := make(map[string]*template.Template, len(views))
	for _, v := range views {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles,
			"templates/layout.html", "templates/"+v+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: parse template %s: %w", v, err)
		}
		pages[v] = t
	}
	return pages, nil
}

// pageData is what every page gets: the layout reads Title, Flash and Session,
// the view reads Data.
type pageData struct {
	Title   string
	Flash   *flash
	Session *session.Session
	Data    any
}

// flash is a one-time notice shown on the page a redirect lands on.
type flash struct {
	Kind string // info, success, warning or danger: the flash-* class
	Text string
}

// flashCookie carries a flash across a redirect. It holds a key of flashes,
// never text, so nobody can make a page show words of their choosing.
const flashCookie = "wharf_flash"

var flashes = map[string]flash{
	"signed-out": {Kind: "info", Text: "You are signed out."},
}

// registerFlashes adds a page's flashes; pages call it from a package-level var, so each
// keeps its texts beside its handlers.
func registerFlashes(m map[string]flash) bool {
	for k, v := range m {
		if _, dup := flashes[k]; dup {
			panic("flash " + k + " registered twice")
		}
		flashes[k] = v
	}
	return true
}

func setFlash(w http.ResponseWriter, key string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: key, Path: "/ui", MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// takeFlash returns the pending flash, if any, and clears it so it shows once.
func takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/ui", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
	if f, ok := flashes[c.Value]; ok {
		return &f
	}
	return nil
}

// renderList renders a list page whose data list fills: with 400 and without listing when
// its filter form is invalid.
func (s *Server) renderList(w http.ResponseWriter, r *http.Request, view, title string, data any, invalid bool, list func() error) {
	if invalid {
		s.render(w, r, http.StatusBadRequest, view, pageData{Title: title, Data: data})
		return
	}
	if err := list(); err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, view, pageData{Title: title, Data: data})
}

// render executes a page into a buffer first, so a template failure becomes a
// clean 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, view string, d pageData) {
	t, ok := s.pages[view]
	if !ok {
		s.fail(w, r, fmt.Errorf("no view %q", view))
		return
	}
	if d.Session == nil {
		d.Session, _ = session.FromContext(r.Context())
	}
	if d.Flash == nil {
		d.Flash = takeFlash(w, r)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		s.fail(w, r, fmt.Errorf("render %s: %w", view, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	buf.WriteTo(w)
}

// fail answers a record the request names that is not there with the not-found page,
// and anything else with a 500 without its details, logged once.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, persistence.ErrNotFound) {
		s.notFound(w, r)
		return
	}
	if errors.Is(err, persistence.ErrUnavailable) {
		// An outage, not a fault: the operator tries again once the database is back.
		s.log.WarnContext(r.Context(), "ui request failed: database unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "10")
		http.Error(w, "the database is unavailable; try again in a moment", http.StatusServiceUnavailable)
		return
	}
	s.log.ErrorContext(r.Context(), "ui request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}

// badForm answers a form that cannot be read: 413 past the body limit, else 400.
func badForm(w http.ResponseWriter, err error) {
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "malformed form", http.StatusBadRequest)
}

// fragment executes one named template of a view's set: a part of the page that a live
// stream sends again when it changes.
func (s *Server) fragment(view, name string, data any) (string, error) {
	t, ok := s.pages[view]
	if !ok {
		return "", fmt.Errorf("no view %q", view)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("render %s of %s: %w", name, view, err)
	}
	return buf.String(), nil
}
