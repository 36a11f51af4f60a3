package ui

import (
	"errors"
	"net/http"
	"strconv"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// routeID reads the route id the path names; a malformed one is a 404, already answered.
func (s *Server) routeID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.notFound(w, r)
		return 0, false
	}
	return id, true
}

func (s *Server) editRoutePage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.routeID(w, r)
	if !ok {
		return
	}
	rt, err := s.store.GetRoute(r.Context(), id)
	if errors.Is(err, persistence.ErrNotFound) {
		s.notFound(w, r)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderRouteEdit(w, r, http.StatusOK, routeForm{ID: rt.ID, Source: string(rt.Source), From: string(rt.From),
		To: string(rt.To), Target: string(rt.Target), Ordered: rt.Ordered, SessionBy: rt.SessionBy,
		Retry: newRetryEditor("retry", routeRetryIntro, policyValues("retry", rt.Retry), nil), RetryOpen: rt.Retry != nil})
}

// updateRoutePage saves an edit through records.UpdateRoute, the rules REST applies.
func (s *Server) updateRoutePage(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.routeID(w, r); ok {
		s.saveRoute(w, r, id)
	}
}

func (s *Server) renderRouteEdit(w http.ResponseWriter, r *http.Request, status int, f routeForm) {
	choices, err := s.routeChoicesFor(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, status, "route_edit", pageData{Title: "Edit a route", Data: struct {
		routeChoices
		Form      routeForm
		CSRFField string
		CSRFToken string
	}{choices, f, session.CSRFField, sessionCSRFToken(r)}})
}
