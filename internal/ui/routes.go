package ui

import (
	"context"
	"errors"
	"net/http"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"routes", "route_edit"}, (*Server).routeRoutes)

var _ = registerFlashes(map[string]flash{
	"route-created": {Kind: "success", Text: "Route added. New messages are routed by it."},
	"route-deleted": {Kind: "success", Text: "Route deleted."},
	"route-updated": {Kind: "success", Text: "Route saved. New messages are routed by it; deliveries already made keep their retry policy."},
})

// routeRoutes lists the routes page and its form actions.
func (s *Server) routeRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/routes", http.HandlerFunc(s.routesPage)},
		{"POST /ui/routes", http.HandlerFunc(s.createRoutePage)},
		{"POST /ui/routes/{id}/delete", http.HandlerFunc(s.deleteRoutePage)},
		{"GET /ui/routes/{id}/edit", http.HandlerFunc(s.editRoutePage)},
		{"POST /ui/routes/{id}", http.HandlerFunc(s.updateRoutePage)},
	}
}

// routeForm is the create and edit form: what was typed, and why it was refused.
type routeForm struct {
	ID                       int64 // the route edited; 0 for a new one
	Source, From, To, Target string
	Ordered                  bool
	SessionBy                string
	Errors                   map[string]string
	// Refusal is a refusal of the route as a whole, such as overlapping another.
	Refusal string
	// Retry is the route's retry override; RetryOpen shows it unfolded (set or refused).
	Retry     *retryEditor
	RetryOpen bool
}

// routeRetryIntro heads a route's retry override.
const routeRetryIntro = "Leave every cell empty to keep the target's retry policy. What is set here goes before the target's policy for the messages this route dispatches: a kind of failure with a row here follows it; one without follows the target's row for it if the target has one, else the default row here; empty cells take the default row here, then the target's."

func (s *Server) routesPage(w http.ResponseWriter, r *http.Request) {
	s.renderRoutes(w, r, http.StatusOK, routeForm{From: persistence.AnyParty, To: persistence.AnyParty,
		Retry: newRetryEditor("retry", routeRetryIntro, nil, nil)})
}

// submittedRoute reads a submitted route form into the form to show again and the input
// records checks; the error is a refusal of the retry override, naming its field.
func submittedRoute(r *http.Request, id int64) (routeForm, records.RouteInput, error) {
	f := routeForm{ID: id, Source: r.PostForm.Get("source"), From: r.PostForm.Get("from"), To: r.PostForm.Get("to"),
		Target: r.PostForm.Get("target"), Ordered: r.PostForm.Get("ordered") != "", SessionBy: r.PostForm.Get("session_by")}
	values := retryFormValues("retry", r.PostForm)
	policy, err := retryOverride("retry", r.PostForm)
	f.Retry = newRetryEditor("retry", routeRetryIntro, values, nil)
	f.RetryOpen = policy != nil
	return f, records.RouteInput{Source: f.Source, From: f.From, To: f.To, Target: f.Target, Ordered: f.Ordered,
		SessionBy: f.SessionBy, Retry: policy}, err
}

// refuseRoute shows the form again with the reasons of a refusal, or answers a failure
// when err is not a refusal of what was typed.
func (s *Server) refuseRoute(w http.ResponseWriter, r *http.Request, f routeForm, err error) {
	var redundant *records.RedundantRouteError
	if errors.As(err, &redundant) {
		f.Refusal = redundant.Error()
	} else if errs, ok := fieldMessages(err); ok {
		f.Errors = errs
		f.Retry = newRetryEditor("retry", routeRetryIntro, retryFormValues("retry", r.PostForm), errs)
		for field := range errs {
			f.RetryOpen = f.RetryOpen || isRetryField("retry", field)
		}
	} else {
		s.fail(w, r, err)
		return
	}
	if f.ID != 0 {
		s.renderRouteEdit(w, r, http.StatusUnprocessableEntity, f)
		return
	}
	s.renderRoutes(w, r, http.StatusUnprocessableEntity, f)
}

func (s *Server) renderRoutes(w http.ResponseWriter, r *http.Request, status int, f routeForm) {
	routes, err := s.store.ListRoutes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The selects offer only instances that can stand on each side; records still checks.
	choices, err := s.routeChoicesFor(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, status, "routes", pageData{Title: "Routes", Data: struct {
		Routes []persistence.Route
		routeChoices
		Form      routeForm
		CSRFField string
		CSRFToken string
	}{routes, choices, f, session.CSRFField, sessionCSRFToken(r)}})
}

func (s *Server) createRoutePage(w http.ResponseWriter, r *http.Request) {
	s.saveRoute(w, r, 0)
}

// saveRoute creates (id 0) or edits route id from the submitted form through the rules
// REST applies, and shows the form again with the reasons when it is refused.
func (s *Server) saveRoute(w http.ResponseWriter, r *http.Request, id int64) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	f, in, err := submittedRoute(r, id)
	flash := "route-created"
	if err == nil && id == 0 {
		_, err = records.CreateRoute(r.Context(), s.store, in)
	} else if err == nil {
		_, err = records.UpdateRoute(r.Context(), s.store, id, in)
		flash = "route-updated"
	}
	if errors.Is(err, persistence.ErrNotFound) {
		s.notFound(w, r)
		return
	}
	if err != nil {
		s.refuseRoute(w, r, f, err)
		return
	}
	s.routesChanged(r)
	setFlash(w, flash)
	http.Redirect(w, r, "/ui/routes", http.StatusSeeOther)
}

func (s *Server) deleteRoutePage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.routeID(w, r)
	if !ok {
		return
	}
	if err := s.store.DeleteRoute(r.Context(), id); err != nil {
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
		case p.Role == module.RoleTarget && c.Type != persistence.PluginNotificationWebhook && c.Type != persistence.PluginEventWebhook:
			targets = append(targets, c.Name)
		}
	}
	return sources, targets, nil
}
