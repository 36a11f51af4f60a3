package api

import (
	"net/http"
	"strconv"

	"wharf/internal/records"
)

// routeInput is a route as a client sends it.
type routeInput struct {
	Source  string `json:"source"`
	From    string `json:"from"`
	To      string `json:"to"`
	Target  string `json:"target"`
	Ordered bool   `json:"ordered"`
	// SessionBy: see persistence.Route.SessionBy.
	SessionBy string `json:"session_by"`
}

func (s *Server) listRoutes(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all, err := s.store.ListRoutes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody("routes", slicePage(all, p), len(all), p))
}

func (s *Server) createRoute(w http.ResponseWriter, r *http.Request) {
	var in routeInput
	if err := decodeJSON(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	rt, err := records.CreateRoute(r.Context(), s.store, records.RouteInput{
		Source: in.Source, From: in.From, To: in.To, Target: in.Target, Ordered: in.Ordered,
		SessionBy: in.SessionBy,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.ops.RoutesChanged(r.Context())
	w.Header().Set("Location", "/api/v1/routes/"+strconv.FormatInt(rt.ID, 10))
	writeJSON(w, http.StatusCreated, rt)
}

func (s *Server) getRoute(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rt, err := s.store.GetRoute(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rt)
}

func (s *Server) deleteRoute(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.DeleteRoute(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.ops.RoutesChanged(r.Context())
	w.WriteHeader(http.StatusNoContent)
}
