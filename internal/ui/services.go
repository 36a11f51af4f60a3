package ui

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/services"
	"wharf/internal/ui/session"
)

// ServiceControl runs the plugin instances; *services.Manager implements it, and it is
// what the REST API's services endpoints act on too.
type ServiceControl interface {
	List(ctx context.Context) ([]services.Status, error)
	Start(ctx context.Context, name persistence.InstanceName) error
	Stop(ctx context.Context, name persistence.InstanceName) error
	Restart(ctx context.Context, name persistence.InstanceName) error
}

var _ ServiceControl = (*services.Manager)(nil)

var _ = registerPages([]string{"services"}, (*Server).serviceRoutes)

var _ = registerFlashes(map[string]flash{
	"service-started":   {Kind: "success", Text: "Started."},
	"service-stopped":   {Kind: "success", Text: "Stopped."},
	"service-restarted": {Kind: "success", Text: "Restarted with its current configuration."},
	"service-failed":    {Kind: "danger", Text: "The action failed; the table shows the reason."},
})

// servicePollSeconds is how often the services page refreshes its table.
const servicePollSeconds = 3

func (s *Server) serviceRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/services", http.HandlerFunc(s.servicesPage)},
		{"GET /ui/services/table", http.HandlerFunc(s.servicesTable)},
		{"POST /ui/services/{type}/{name}/start", s.serviceAction("start")},
		{"POST /ui/services/{type}/{name}/stop", s.serviceAction("stop")},
		{"POST /ui/services/{type}/{name}/restart", s.serviceAction("restart")},
	}
}

// serviceRow is one instance's service as the table shows it.
type serviceRow struct {
	services.Status
	Since      string
	BadgeClass string
	Running    bool
}

// servicesData is the services table: the instances and what each action needs.
type servicesData struct {
	Services    []serviceRow
	PollSeconds int
	CSRFField   string
	CSRFToken   string
	Unavailable bool
	ListFailed  bool
	// Processes are the installation's processes (nil when the UI has no list).
	Processes       []processRow
	ProcessesFailed bool
}

func (s *Server) servicesData(r *http.Request) servicesData {
	d := servicesData{PollSeconds: servicePollSeconds, CSRFField: session.CSRFField, CSRFToken: sessionCSRFToken(r)}
	d.Processes, d.ProcessesFailed = s.processRows(r)
	if s.services == nil {
		d.Unavailable = true
		return d
	}
	list, err := s.services.List(r.Context())
	if err != nil {
		s.log.ErrorContext(r.Context(), "list services", "err", err)
		d.ListFailed = true
		return d
	}
	for _, st := range list {
		row := serviceRow{Status: st, Running: st.State == services.StateRunning || st.State == services.StateDegraded}
		if !st.Since.IsZero() {
			row.Since = st.Since.UTC().Format(time.RFC3339)
		}
		switch st.State {
		case services.StateRunning:
			row.BadgeClass = "badge-success"
		case services.StateFailed:
			row.BadgeClass = "badge-danger"
		case services.StateDisabled, services.StateDegraded:
			row.BadgeClass = "badge-warning"
		default:
			row.BadgeClass = "badge-neutral"
		}
		d.Services = append(d.Services, row)
	}
	return d
}

func (s *Server) servicesPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "services", pageData{Title: "Services", Data: s.servicesData(r)})
}

// servicesTable is the table alone, which the page polls to follow the state live.
func (s *Server) servicesTable(w http.ResponseWriter, r *http.Request) {
	s.renderFragment(w, r, "services", "services-table", s.servicesData(r))
}

// renderFragment executes one named template of a view, without the layout, for htmx.
func (s *Server) renderFragment(w http.ResponseWriter, r *http.Request, view, name string, data any) {
	t, ok := s.pages[view]
	if !ok {
		s.fail(w, r, errors.New("no view "+view))
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	buf.WriteTo(w)
}

// serviceAction starts, stops or restarts the instance the path names, whose type must
// agree, as the REST API does; the answer is the services page with a flash.
func (s *Server) serviceAction(action string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, ok := s.loadInstance(w, r)
		if !ok {
			return
		}
		if s.services == nil {
			http.Error(w, "services are not available in this process", http.StatusServiceUnavailable)
			return
		}
		var err error
		done := "service-" + action + "ed"
		switch action {
		case "start":
			err = s.services.Start(r.Context(), rec.Name)
		case "stop":
			err, done = s.services.Stop(r.Context(), rec.Name), "service-stopped"
		default:
			err = s.services.Restart(r.Context(), rec.Name)
		}
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			s.notFound(w, r)
			return
		case err != nil:
			// The manager records a failed start in the instance's state, which the page shows.
			s.log.WarnContext(r.Context(), "service action failed", "action", action, "instance", string(rec.Name), "err", err)
			setFlash(w, "service-failed")
		default:
			setFlash(w, done)
		}
		http.Redirect(w, r, "/ui/services", http.StatusSeeOther)
	})
}

// loadInstance reads the plugin instance the path's type and name name; an unknown type,
// an invalid or unknown name, or an instance of another type is a 404, already answered.
func (s *Server) loadInstance(w http.ResponseWriter, r *http.Request) (persistence.PluginConfig, bool) {
	typ := persistence.PluginType(r.PathValue("type"))
	if _, ok := module.Lookup(typ); !ok {
		s.notFound(w, r)
		return persistence.PluginConfig{}, false
	}
	name, err := persistence.ParseInstanceName(r.PathValue("name"))
	if err != nil {
		s.notFound(w, r)
		return persistence.PluginConfig{}, false
	}
	rec, err := s.store.GetPluginConfig(r.Context(), name)
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && rec.Type != typ) {
		s.notFound(w, r)
		return persistence.PluginConfig{}, false
	}
	if err != nil {
		s.fail(w, r, err)
		return persistence.PluginConfig{}, false
	}
	return rec, true
}
