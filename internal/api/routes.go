package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"wharf/internal/persistence"
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
	// Retry is read by persistence.DecodeRetry, which names the policy's own fields.
	Retry json.RawMessage `json:"retry,omitempty"`
}

// decodeRoute reads a route from the request body into what records validates; a
// refused retry policy names its field.
func decodeRoute(r *http.Request) (records.RouteInput, error) {
	var in routeInput
	if err := decodeJSON(r, &in); err != nil {
		return records.RouteInput{}, err
	}
	policy, err := persistence.DecodeRetry("retry", in.Retry)
	if err != nil {
		return records.RouteInput{}, err
	}
	return records.RouteInput{Source: in.Source, From: in.From, To: in.To, Target: in.Target, Ordered: in.Ordered,
		SessionBy: in.SessionBy, Retry: policy}, nil
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
	in, err := decodeRoute(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rt, err := records.CreateRoute(r.Context(), s.store, in)
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

// updateRoute replaces a route's fields (the whole route, as create takes it) under the
// same rules as create; deliveries already dispatched keep the retry policy they have.
func (s *Server) updateRoute(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	in, err := decodeRoute(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rt, err := records.UpdateRoute(r.Context(), s.store, id, in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.ops.RoutesChanged(r.Context())
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
