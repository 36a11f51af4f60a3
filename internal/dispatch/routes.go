// Package dispatch decides where messages go and hands them to the delivery engine: it
// keeps the in-memory route cache, ingests documents from sources in durable batches,
// and carries out the operator's redispatch and redeliver.
package dispatch

import (
	"context"
	"fmt"
	"sync"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// routeCache holds the routes in memory; any change to routes or plugin instances
// invalidates it and the next match reloads.
type routeCache struct {
	mu     sync.Mutex
	routes []persistence.Route
	loaded bool
	gen    uint64
}

func (c *routeCache) invalidate() {
	c.mu.Lock()
	c.loaded = false
	c.gen++
	c.mu.Unlock()
}

func (c *routeCache) get(ctx context.Context, load func(context.Context) ([]persistence.Route, error)) ([]persistence.Route, error) {
	c.mu.Lock()
	if c.loaded {
		r := c.routes
		c.mu.Unlock()
		return r, nil
	}
	gen := c.gen
	c.mu.Unlock()
	routes, err := load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load routes: %w", err)
	}
	c.mu.Lock()
	// A change that raced the load wins: keep the cache cold so the next match reloads.
	if c.gen == gen {
		c.routes, c.loaded = routes, true
	}
	c.mu.Unlock()
	return routes, nil
}

// Match is the one place routing is decided: the distinct targets of every route that
// takes a message from source with these parties, in route order.
func Match(routes []persistence.Route, source persistence.InstanceName, from, to persistence.PartyName) []persistence.InstanceName {
	var out []persistence.InstanceName
	for _, r := range routes {
		if r.Matches(source, from, to) {
			out = appendNew(out, r.Target)
		}
	}
	return out
}

// RetryOverrides are the retry policies of the routes that dispatch a message from source
// with these parties, by target: the first matching route of each target (the one Match
// takes it from) decides, and a target whose route keeps the target's policy is absent.
func RetryOverrides(routes []persistence.Route, source persistence.InstanceName, from, to persistence.PartyName) map[persistence.InstanceName]*retry.Policy {
	var out map[persistence.InstanceName]*retry.Policy
	seen := map[persistence.InstanceName]bool{}
	for _, r := range routes {
		if !r.Matches(source, from, to) || seen[r.Target] {
			continue
		}
		seen[r.Target] = true
		if r.Retry != nil {
			if out == nil {
				out = map[persistence.InstanceName]*retry.Policy{}
			}
			out[r.Target] = r.Retry
		}
	}
	return out
}
