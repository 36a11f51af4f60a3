package dispatch

import (
	"maps"
	"slices"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

func TestMatch(t *testing.T) {
	routes := []persistence.Route{
		{ID: 1, Source: "poller", From: "*", To: "acme", Target: "writer"},
		{ID: 2, Source: "poller", From: "local", To: "*", Target: "poster"},
		{ID: 3, Source: "poller", From: "*", To: "*", Target: "writer"},
		{ID: 4, Source: "receiver", From: "*", To: "*", Target: "archive"},
	}
	tests := []struct {
		source   persistence.InstanceName
		from, to persistence.PartyName
		want     []persistence.InstanceName
	}{
		{"poller", "local", "acme", []persistence.InstanceName{"writer", "poster"}},
		{"poller", "other", "acme", []persistence.InstanceName{"writer"}},
		{"poller", "other", "beta", []persistence.InstanceName{"writer"}},
		{"receiver", "acme", "local", []persistence.InstanceName{"archive"}},
		{"nobody", "acme", "local", nil},
	}
	for _, tt := range tests {
		got := Match(routes, tt.source, tt.from, tt.to)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Match(%s, %s, %s) = %v, want %v", tt.source, tt.from, tt.to, got, tt.want)
		}
	}
}

// TestRetryOverrides: each target takes the override of its first matching route, and a
// first route without one leaves the target's policy even when a later route has one.
func TestRetryOverrides(t *testing.T) {
	fast := &retry.Policy{Strategy: retry.Fixed}
	slow := &retry.Policy{Strategy: retry.Linear}
	routes := []persistence.Route{
		{ID: 1, Source: "poller", From: "*", To: "acme", Target: "writer", Retry: fast},
		{ID: 2, Source: "poller", From: "local", To: "*", Target: "poster"},
		{ID: 3, Source: "poller", From: "*", To: "*", Target: "writer", Retry: slow},
		{ID: 4, Source: "poller", From: "*", To: "beta", Target: "poster", Retry: slow},
	}
	tests := []struct {
		from, to persistence.PartyName
		want     map[persistence.InstanceName]*retry.Policy
	}{
		{"local", "acme", map[persistence.InstanceName]*retry.Policy{"writer": fast}},
		{"other", "beta", map[persistence.InstanceName]*retry.Policy{"writer": slow, "poster": slow}},
		{"local", "beta", map[persistence.InstanceName]*retry.Policy{"writer": slow}},
		{"local", "other", map[persistence.InstanceName]*retry.Policy{"writer": slow}},
	}
	for _, tt := range tests {
		got := RetryOverrides(routes, "poller", tt.from, tt.to)
		if !maps.Equal(got, tt.want) {
			t.Errorf("RetryOverrides(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}
