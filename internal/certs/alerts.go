package certs

import (
	"context"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/persistence"
)

// RepeatAfter is how long the monitor keeps quiet about a certificate it has reported,
// though the hourly check finds it again.
const RepeatAfter = 24 * time.Hour

// RaiseAlerts makes every check raise certificate_expiring and certificate_expired
// alerts, each at most once per RepeatAfter per certificate and kind. Call it before
// Start.
func (m *Monitor) RaiseAlerts(r alert.Raiser) {
	var mu sync.Mutex
	last := map[alertKey]time.Time{}
	m.OnExpiry = func(ctx context.Context, c persistence.Certificate, expired bool) {
		now := m.clock()
		k := alertKey{c.ID, c.Fingerprint, expired}
		mu.Lock()
		prev, seen := last[k]
		if seen && now.Sub(prev) < RepeatAfter {
			mu.Unlock()
			return
		}
		last[k] = now
		mu.Unlock()
		r.Raise(alert.ForCertificate(c, expired, now))
	}
}

type alertKey struct {
	id          int64
	fingerprint string
	expired     bool
}
