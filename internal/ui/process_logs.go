package ui

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"wharf/internal/logging"
)

// ProcessLogs reads the log rings of the installation's other processes over the bus,
// for the logs page's process selector.
type ProcessLogs interface {
	// Self is this process's id, whose lines come from the page's own ring.
	Self() string
	// Tail is up to limit of the process's newest records, newest first, at min level or
	// above whose line contains text.
	Tail(ctx context.Context, processID string, min slog.Level, text string, limit int) ([]logging.Entry, error)
	// Watch signals (coalesced) whenever the process logs new records, until cancel is
	// called or ctx ends.
	Watch(ctx context.Context, processID string) (wake <-chan struct{}, cancel func(), err error)
}

// maxProcessID bounds the process parameter.
const maxProcessID = 64

// validProcessID accepts what a process id is (lower-case hexadecimal, as the heartbeats
// store it), so a bus subject is built only from those characters.
func validProcessID(id string) bool {
	if id == "" || len(id) > maxProcessID {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'f' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// remoteProcess is the process f selects when it is another process than this one.
func (s *Server) remoteProcess(f logsFilter) (string, bool) {
	if f.Process == "" || s.processLogs == nil || f.Process == s.processLogs.Self() {
		return "", false
	}
	return f.Process, true
}

// processOption is one entry of the logs page's process selector.
type processOption struct {
	ID    string
	Label string
}

// processOptions lists the installation's processes for the selector, this one first
// under its own name; nil when there is no other process to show.
func (s *Server) processOptions(r *http.Request) []processOption {
	if s.processLogs == nil {
		return nil
	}
	self := s.processLogs.Self()
	opts := []processOption{{ID: "", Label: "This process"}}
	rows, _ := s.processRows(r)
	for _, p := range rows {
		if p.ID == self {
			continue
		}
		label := fmt.Sprintf("%s (%s) %s, heartbeat %s", p.Host, p.RolesText, p.Version, p.Heartbeat)
		if p.Stale {
			label += ", missed heartbeats"
		}
		opts = append(opts, processOption{ID: p.ID, Label: label})
	}
	if len(opts) == 1 {
		return nil // only this process: nothing to choose
	}
	return opts
}
