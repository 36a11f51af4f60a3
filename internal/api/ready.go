package api

import (
	"context"
	"net/http"
)

// Readiness is what the process depends on, as GET /readyz reports it: each part "ok" or
// "unavailable".
type Readiness struct {
	Status   string `json:"status"`
	Database string `json:"database"`
	Bus      string `json:"bus"`
}

// Ready reports whether every part answers.
func (r Readiness) Ready() bool { return r.Database == "ok" && r.Bus == "ok" }

// Health is the process's check of what it depends on (the gateway's health monitor).
type Health interface {
	// Check pings the database and the bus now and reports them.
	Check(ctx context.Context) Readiness
	// Unavailable hears of a request that failed because the database is out of reach,
	// so the next check comes at once rather than at its interval.
	Unavailable()
}

// readyz is the load balancers' readiness check: 503 while the database or the bus does
// not answer, so traffic goes elsewhere; /healthz stays the liveness check.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.ready == nil {
		writeJSON(w, http.StatusOK, Readiness{Status: "ok", Database: "ok", Bus: "ok"})
		return
	}
	rd := s.ready.Check(r.Context())
	status := http.StatusOK
	rd.Status = "ok"
	if !rd.Ready() {
		status, rd.Status = http.StatusServiceUnavailable, "unavailable"
	}
	writeJSON(w, status, rd)
}
