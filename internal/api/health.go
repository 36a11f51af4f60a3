package api

import (
	"net/http"
	"time"
)

type healthBody struct {
	Status        string    `json:"status"`
	Database      string    `json:"database"`
	Version       string    `json:"version"`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds int64     `json:"uptime_seconds"`
}

// health reports the server and its database, which it reaches with a cheap read.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	b := healthBody{Status: "ok", Database: "ok", Version: s.version, StartedAt: s.started.UTC(),
		UptimeSeconds: int64(time.Since(s.started) / time.Second)}
	status := http.StatusOK
	if _, err := s.store.ListSettings(r.Context()); err != nil {
		s.log.WarnContext(r.Context(), "health check: database unreachable", "request_id", requestID(r.Context()), "error", err)
		b.Status, b.Database = "unavailable", "unavailable"
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, b)
}
