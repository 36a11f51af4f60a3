package alert

import (
	"fmt"
	"testing"
	"time"
)

func TestCooldown(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCooldown(15*time.Minute, func() time.Time { return now })
	steps := []struct {
		after time.Duration
		key   string
		want  bool
	}{
		{0, "acme", true},
		{time.Minute, "acme", false},
		{0, "beta", true},
		{13 * time.Minute, "acme", false},
		{time.Minute, "acme", true}, // 15 minutes after the first
		{time.Minute, "acme", false},
		{time.Minute, "beta", true},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		if got := c.Allow(s.key); got != s.want {
			t.Errorf("step %d (%s): %v, want %v", i, s.key, got, s.want)
		}
	}
	// The keys it remembers stay bounded.
	for i := range 3 * maxCooldownKeys {
		c.Allow(fmt.Sprint(i))
	}
	if n := len(c.last); n > maxCooldownKeys {
		t.Errorf("%d keys remembered, want at most %d", n, maxCooldownKeys)
	}
}
