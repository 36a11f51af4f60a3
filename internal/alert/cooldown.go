package alert

import (
	"sync"
	"time"
)

// RefusalCooldown is how long after a message_refused alert of a party the next
// refusals of its messages raise none: a partner whose every message is refused (a
// changed certificate, a wrong key) makes one alert per window, not one per message.
const RefusalCooldown = 15 * time.Minute

// maxCooldownKeys bounds the keys a Cooldown remembers.
const maxCooldownKeys = 10000

// Cooldown lets the first event of a key through and holds back the others until the
// window after it has passed. It is safe for concurrent use.
type Cooldown struct {
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

// NewCooldown returns a cooldown of window on the clock now (time.Now when nil).
func NewCooldown(window time.Duration, now func() time.Time) *Cooldown {
	if now == nil {
		now = time.Now
	}
	return &Cooldown{window: window, now: now, last: map[string]time.Time{}}
}

// Allow reports whether an event of key may pass now, and if so starts its window.
func (c *Cooldown) Allow(key string) bool {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.last[key]; ok && now.Sub(t) < c.window {
		return false
	}
	if len(c.last) >= maxCooldownKeys {
		for k, t := range c.last {
			if now.Sub(t) >= c.window {
				delete(c.last, k)
			}
		}
		if len(c.last) >= maxCooldownKeys {
			// Every key is within its window: forgetting them all costs at most one
			// more alert per key.
			clear(c.last)
		}
	}
	c.last[key] = now
	return true
}
