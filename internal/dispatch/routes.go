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
	for _, r := range MatchRoutes(routes, source, from, to) {
		out = append(out, r.Target)
	}
	return out
}

// MatchRoutes is Match with the route that decided each target: the first matching
// route to it in route order, or the first ordered one when several match, so a
// message some ordered route covers is delivered in order.
func MatchRoutes(routes []persistence.Route, source persistence.InstanceName, from, to persistence.PartyName) []persistence.Route {
	var out []persistence.Route
	at := make(map[persistence.InstanceName]int)
	for _, r := range routes {
		if !r.Matches(source, from, to) {
			continue
		}
		i, seen := at[r.Target]
		switch {
		case !seen:
			at[r.Target] = len(out)
			out = append(out, r)
		case r.Ordered && !out[i].Ordered:
			out[i] = r
		}
	}
	return out
}

// sessionsOf keys the ordered sessions of a message's deliveries (persistence.SessionFor).
func sessionsOf(routes []persistence.Route, m persistence.Message) map[persistence.InstanceName]persistence.DeliverySession {
	var out map[persistence.InstanceName]persistence.DeliverySession
	for _, r := range routes {
		if ses, ok := persistence.SessionFor(r, m); ok {
			if out == nil {
				out = make(map[persistence.InstanceName]persistence.DeliverySession)
			}
			out[r.Target] = ses
		}
	}
	return out
}

// RetryOverrides are the retry policies of the routes that dispatch a message from source
// with these parties, by target: the route that decides each target (see MatchRoutes)
// decides, and a target whose route keeps the target's policy is absent.
func RetryOverrides(routes []persistence.Route, source persistence.InstanceName, from, to persistence.PartyName) map[persistence.InstanceName]*retry.Policy {
	return retryOf(MatchRoutes(routes, source, from, to))
}

// retryOf is the retry overrides of the routes that decided a message's targets.
func retryOf(decided []persistence.Route) map[persistence.InstanceName]*retry.Policy {
	var out map[persistence.InstanceName]*retry.Policy
	for _, r := range decided {
		if r.Retry != nil {
			if out == nil {
				out = map[persistence.InstanceName]*retry.Policy{}
			}
			out[r.Target] = r.Retry
		}
	}
	return out
}
