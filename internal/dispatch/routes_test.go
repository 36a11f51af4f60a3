package dispatch

import (
	"slices"
	"testing"

	"wharf/internal/persistence"
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
