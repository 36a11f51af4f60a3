package api

import (
	"net/http"

	"wharf/internal/persistence"
)

// traceBody is a trace as REST answers it: what was asked, what was found, and the cap.
type traceBody struct {
	persistence.Trace
	OriginEventID string `json:"origin_event_id,omitempty"`
	CorrelationID string `json:"correlation_id,omitempty"`
	Limit         int    `json:"limit"`
}

// parseTraceQuery reads exactly one of origin_event_id and correlation_id.
func parseTraceQuery(r *http.Request) (persistence.TraceQuery, error) {
	var q persistence.TraceQuery
	params := r.URL.Query()
	for name, vs := range params {
		switch name {
		case "origin_event_id", "correlation_id":
		case "":
			return q, invalid("query", "a parameter without a name; give origin_event_id or correlation_id")
		default:
			return q, invalid(name, "unknown parameter; give origin_event_id or correlation_id")
		}
		if len(vs) > 1 {
			return q, invalid(name, "given more than once")
		}
	}
	q.OriginEventID, q.CorrelationID = params.Get("origin_event_id"), params.Get("correlation_id")
	if err := q.Check(); err != nil {
		return q, err
	}
	return q, nil
}

// trace answers everything that came from one origin event or carries one correlation
// id: messages with their final statuses, deliveries, and every history line.
func (s *Server) trace(w http.ResponseWriter, r *http.Request) {
	q, err := parseTraceQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tr, err := s.store.Trace(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, traceBody{Trace: tr, OriginEventID: q.OriginEventID, CorrelationID: q.CorrelationID, Limit: persistence.MaxTraceMessages})
}
