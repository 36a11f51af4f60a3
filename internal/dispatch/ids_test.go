package dispatch

import (
	"strings"
	"testing"
	"time"
)

// Generated ids are 32 hex digits, differ within a millisecond, and sort in the order
// they were made across milliseconds.
func TestOrGenerated(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if got := orGenerated("given", t0); got != "given" {
		t.Fatalf("a given id became %q", got)
	}
	a, b := orGenerated("", t0), orGenerated("", t0)
	later := orGenerated("", t0.Add(time.Millisecond))
	for _, id := range []string{a, b, later} {
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Errorf("generated id %q is not 32 hex digits", id)
		}
	}
	if a == b {
		t.Errorf("two ids made in one millisecond are the same: %s", a)
	}
	if !(a < later && b < later) {
		t.Errorf("ids %s and %s sort after %s, made a millisecond later", a, b, later)
	}
}
