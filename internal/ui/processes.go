package ui

import (
	"context"
	"net/http"
	"strings"
	"time"

	"wharf/internal/persistence/db"
)

// Processes lists the installation's processes as their heartbeats last reported them;
// *db.Store implements it.
type Processes interface {
	ListProcesses(ctx context.Context) ([]db.Process, error)
}

// processRow is one process as the services page shows it.
type processRow struct {
	db.Process
	RolesText string
	Started   string
	Heartbeat string
	Stale     bool
}

// processRows lists the processes for the services page, marking those that missed their
// heartbeats; a failure to list is logged and reported as such.
func (s *Server) processRows(r *http.Request) ([]processRow, bool) {
	if s.processes == nil {
		return nil, false
	}
	list, err := s.processes.ListProcesses(r.Context())
	if err != nil {
		s.log.ErrorContext(r.Context(), "list processes", "err", err)
		return nil, true
	}
	now := s.now()
	rows := make([]processRow, 0, len(list))
	for _, p := range list {
		rows = append(rows, processRow{Process: p, RolesText: strings.Join(p.Roles, ", "),
			Started: p.StartedAt.UTC().Format(time.RFC3339), Heartbeat: p.HeartbeatAt.UTC().Format(time.RFC3339),
			Stale: p.Stale(now)})
	}
	return rows, false
}
