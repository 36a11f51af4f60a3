// Package throttle slows down repeated sign-in failures. A Limiter counts
// failures per key and, past a free allowance, makes the next attempt wait a
// delay that doubles with each failure up to a cap: guessing gets slow
// quickly, yet the owner of an account under attack is only ever delayed,
// never locked out.
//
// Sign-in uses two limiters, one keyed by account and one by client address,
// checks both before verifying anything, answers 429 with Retry-After (see
// RetryAfter) when either asks for a wait, records a failure in both, and on
// success calls Succeed on the account limiter only: resetting the address
// limiter would let one working account launder guesses against others.
//
// Check and Fail are separate calls, so attempts already in flight when the
// delay starts are not stopped; the cost of each password hash bounds that
// window.
package throttle

import (
	"container/list"
	"math"
	"sync"
	"time"
)

// Config tunes a Limiter; zero fields take the defaults noted.
type Config struct {
	Free    int           // failures allowed without delay (default 3)
	Base    time.Duration // delay after the first counted failure (default 1 s)
	Max     time.Duration // largest delay (default 15 min)
	Forget  time.Duration // a key idle this long is dropped (default 24 h, at least Max)
	MaxKeys int           // keys tracked at most; the least recently failed is evicted (default 100,000)
}

// Limiter is safe for concurrent use.
type Limiter struct {
	cfg Config

	mu    sync.Mutex
	keys  map[string]*list.Element
	order *list.List // of *entry, most recent failure first
}

type entry struct {
	key      string
	failures int
	last     time.Time
}

// New returns a Limiter with cfg's gaps filled by defaults.
func New(cfg Config) *Limiter {
	if cfg.Free <= 0 {
		cfg.Free = 3
	}
	if cfg.Base <= 0 {
		cfg.Base = time.Second
	}
	if cfg.Max <= 0 {
		cfg.Max = 15 * time.Minute
	}
	if cfg.Max < cfg.Base {
		cfg.Max = cfg.Base
	}
	if cfg.Forget <= 0 {
		cfg.Forget = 24 * time.Hour
	}
	if cfg.Forget < cfg.Max {
		cfg.Forget = cfg.Max
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 100_000
	}
	return &Limiter{cfg: cfg, keys: make(map[string]*list.Element), order: list.New()}
}

// Check returns how long the caller must wait before the next attempt for
// key is allowed; zero means go ahead.
func (l *Limiter) Check(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.keys[key]
	if !ok {
		return 0
	}
	e := el.Value.(*entry)
	if now.Sub(e.last) >= l.cfg.Forget {
		l.remove(el)
		return 0
	}
	return max(0, e.last.Add(l.delay(e.failures)).Sub(now))
}

// Fail records a failed attempt for key at now.
func (l *Limiter) Fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	if el, ok := l.keys[key]; ok {
		e := el.Value.(*entry)
		e.failures++
		e.last = now
		l.order.MoveToFront(el)
		return
	}
	for len(l.keys) >= l.cfg.MaxKeys {
		l.remove(l.order.Back())
	}
	l.keys[key] = l.order.PushFront(&entry{key: key, failures: 1, last: now})
}

// Succeed forgets key's failures.
func (l *Limiter) Succeed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.keys[key]; ok {
		l.remove(el)
	}
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// delay is the wait after the given number of failures: none within the
// free allowance, then Base doubling per failure, capped at Max.
func (l *Limiter) delay(failures int) time.Duration {
	over := failures - l.cfg.Free
	if over <= 0 {
		return 0
	}
	if over > 62 || l.cfg.Base > time.Duration(math.MaxInt64>>(over-1)) {
		return l.cfg.Max
	}
	return min(l.cfg.Base<<(over-1), l.cfg.Max)
}

// expire drops keys idle for Forget, oldest first; the list is ordered by
// last failure, so it stops at the first live one.
func (l *Limiter) expire(now time.Time) {
	for el := l.order.Back(); el != nil; el = l.order.Back() {
		if now.Sub(el.Value.(*entry).last) < l.cfg.Forget {
			return
		}
		l.remove(el)
	}
}

func (l *Limiter) remove(el *list.Element) {
	l.order.Remove(el)
	delete(l.keys, el.Value.(*entry).key)
}

// RetryAfter converts a wait into whole seconds for a Retry-After header,
// rounding up so a client that obeys it is not refused again.
func RetryAfter(wait time.Duration) int {
	if wait <= 0 {
		return 0
	}
	return int((wait + time.Second - 1) / time.Second)
}
