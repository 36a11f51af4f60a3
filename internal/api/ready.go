package api

import (
	"wharf/internal/probe"
)

// Health is the process's check of what it depends on (the gateway's health monitor).
type Health interface {
	// Check pings the database and the bus now and reports them with the process's
	// roles.
	probe.Checker
	// Unavailable hears of a request that failed because the database is out of reach,
	// so the next check comes at once rather than at its interval.
	Unavailable()
}
