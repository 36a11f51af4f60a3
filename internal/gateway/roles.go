package gateway

import (
	"slices"
	"sync"

	"wharf/internal/probe"
)

// Roles a process runs, as its readiness names them. A standalone process runs them all;
// a process of a distributed installation expects only its own.
const (
	// RoleEngine is the delivery engine's outcome writer.
	RoleEngine = "engine"
	// RolePlugins is every enabled plugin instance the process runs, each started or
	// failed visibly (its service failed with an alert).
	RolePlugins = "plugins"
	// RoleSweeper is the sweep.
	RoleSweeper = "sweeper"
)

// roleSet tracks which of the roles a process expects have started; readiness waits for
// all of them and ends when shutdown begins.
type roleSet struct {
	mu       sync.Mutex
	expected []string
	started  map[string]bool
	stopping bool
}

// Expect adds roles the process must start before it is ready.
func (h *Health) Expect(roles ...string) {
	h.roles.mu.Lock()
	defer h.roles.mu.Unlock()
	for _, r := range roles {
		if !slices.Contains(h.roles.expected, r) {
			h.roles.expected = append(h.roles.expected, r)
		}
	}
}

// Started marks a role as running.
func (h *Health) Started(role string) {
	h.roles.mu.Lock()
	defer h.roles.mu.Unlock()
	if h.roles.started == nil {
		h.roles.started = map[string]bool{}
	}
	h.roles.started[role] = true
}

// Stopping makes the process unready for good: shutdown began, traffic should go
// elsewhere while it drains.
func (h *Health) Stopping() {
	h.roles.mu.Lock()
	defer h.roles.mu.Unlock()
	h.roles.stopping = true
}

// state is the roles' part of the readiness and the roles not started yet.
func (s *roleSet) state() (string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return probe.Stopping, nil
	}
	var waiting []string
	for _, r := range s.expected {
		if !s.started[r] {
			waiting = append(waiting, r)
		}
	}
	if len(waiting) > 0 {
		return probe.Starting, waiting
	}
	return probe.OK, nil
}
