// Package alerttest helps tests of alert producers: a Raiser that keeps what it is given.
package alerttest

import (
	"sync"

	"wharf/internal/alert"
)

// Recorder is an alert.Raiser that keeps every alert raised, safe for concurrent use.
type Recorder struct {
	mu sync.Mutex
	as []alert.Alert
}

var _ alert.Raiser = (*Recorder)(nil)

// Raise keeps a.
func (r *Recorder) Raise(a alert.Alert) {
	r.mu.Lock()
	r.as = append(r.as, a)
	r.mu.Unlock()
}

// Alerts returns the alerts raised so far, oldest first.
func (r *Recorder) Alerts() []alert.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]alert.Alert(nil), r.as...)
}

// Codes returns "code:subject id" of each alert raised so far, oldest first.
func (r *Recorder) Codes() []string {
	var out []string
	for _, a := range r.Alerts() {
		out = append(out, string(a.Code)+":"+a.Subject.ID)
	}
	return out
}
