package ui

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"routes"}, (*Server).routeRoutes)

var _ = registerFlashes(map[string]flash{
	"route-created": {Kind: "success", Text: "Route added. New messages are routed by it."},
	"route-deleted": {Kind: "success", Text: "Route deleted."},
})

// routeRoutes lists the routes page and its form actions.
func (s *Server) routeRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/routes", http.HandlerFunc(s.routesPage)},
		{"POST /ui/routes", http.HandlerFunc(s.createRoutePage)},
		{"POST /ui/routes/{id}/delete", http.HandlerFunc(s.deleteRoutePage)},
	}
}

// routeForm is the create form: what was typed, and why it was refused.
type routeForm struct {
	Source, From, To, Target string
	Ordered                  bool
	SessionBy                string
	Errors                   map[string]string
	// Refusal is a refusal of the route as a whole, such as overlapping another.
	Refusal string
}

func (s *Server) routesPage(w http.ResponseWriter, r *http.Request) {
	s.renderRoutes(w, r, http.StatusOK, routeForm{From: persistence.AnyParty, To: persistence.AnyParty})
}

func (s *Server) renderRoutes(w http.ResponseWriter, r *http.Request, status int, f routeForm) {
	routes, err := s.store.ListRoutes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The selects offer only instances that can stand on each side; records still checks.
	sources, targets, err := s.instancesByRole(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, status, "routes", pageData{Title: "Routes", Data: struct {
		Routes    []persistence.Route
		Sources   []persistence.InstanceName
		Targets   []persistence.InstanceName
		Form      routeForm
		CSRFField string
		CSRFToken string
	}{routes, sources, targets, f, session.CSRFField, sessionCSRFToken(r)}})
}

func (s *Server) createRoutePage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	f := routeForm{Source: r.PostForm.Get("source"), From: r.PostForm.Get("from"), To: r.PostForm.Get("to"),
		Target: r.PostForm.Get("target"), Ordered: r.PostForm.Get("ordered") != "", SessionBy: r.PostForm.Get("session_by")}
	_, err := records.CreateRoute(r.Context(), s.store, records.RouteInput{
		Source: f.Source, From: f.From, To: f.To, Target: f.Target, Ordered: f.Ordered, SessionBy: f.SessionBy})
	if err != nil {
		var redundant *records.RedundantRouteError
		if errors.As(err, &redundant) {
			f.Refusal = redundant.Error()
		} else if errs, ok := fieldMessages(err); ok {
			f.Errors = errs
		} else {
			s.fail(w, r, err)
			return
		}
		s.renderRoutes(w, r, http.StatusUnprocessableEntity, f)
		return
	}
	s.routesChanged(r)
	setFlash(w, "route-created")
	http.Redirect(w, r, "/ui/routes", http.StatusSeeOther)
}

func (s *Server) deleteRoutePage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.notFound(w, r)
		return
	}
	err = s.store.DeleteRoute(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.routesChanged(r)
	setFlash(w, "route-deleted")
	http.Redirect(w, r, "/ui/routes", http.StatusSeeOther)
}

// instancesByRole lists the configured source and target instances, by name. Notifiers
// are targets of alerts, not of messages, and are left out.
func (s *Server) instancesByRole(ctx context.Context) (sources, targets []persistence.InstanceName, err error) {
	configs, err := s.store.ListPluginConfigs(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	for _, c := range configs {
		p, ok := module.Lookup(c.Type)
		switch {
		case !ok:
		case p.Role == module.RoleSource:
			sources = append(sources, c.Name)
		case p.Role == module.RoleTarget && c.Type != persistence.PluginNotificationWebhook:
			targets = append(targets, c.Name)
		}
	}
	return sources, targets, nil
}
