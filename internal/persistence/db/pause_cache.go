package db

import (
	"sync"
	"time"
)

// noPausesTTL bounds how long a claim trusts that no partner is paused without reading
// the pauses again, should the announcement of a pause in another process be lost.
const noPausesTTL = 5 * time.Second

// pauseCache remembers that no partner is paused, so claims (one per handful of
// deliveries) need not read the empty pause table each time. Only "none" is remembered:
// while a partner is paused, every claim reads the pauses in its own transaction, so a
// resumption is never missed. A pause or resumption committed here, or announced from
// another process (PausesChanged), forgets it.
type pauseCache struct {
	mu   sync.Mutex
	none time.Time // when a read found no pause; zero: not known
	gen  uint64
}

// noPauses reports whether no partner is known to be paused.
func (c *pauseCache) noPauses() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.none.IsZero() && time.Since(c.none) < noPausesTTL
}

// generation is the count of changes heard, taken before a read of the pauses.
func (c *pauseCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// rememberNone records that a read begun at generation gen found no pause, unless a
// change was heard since.
func (c *pauseCache) rememberNone(gen uint64, readAt time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.none = readAt
	}
}

func (c *pauseCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.none = time.Time{}
	c.gen++
}

// PausesChanged tells the store that a partner was paused or resumed in another
// process (over the bus), so the next claim reads the pauses again.
func (s *Store) PausesChanged() { s.pauseCache.forget() }
