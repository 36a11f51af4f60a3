package api

import (
	"net/http"

	"wharf/internal/events"
)

// events serves the history as server-sent events (events.Stream); 503 when the process
// has no stream.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if s.eventStream == nil {
		s.fail(w, r, &apiError{status: http.StatusServiceUnavailable, code: "UNAVAILABLE", message: "the event stream is not available in this process"})
		return
	}
	q, err := events.ParseQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.eventStream.Serve(w, r, q)
}
