package receiver

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// keyedLimit counts the requests in progress per key (a remote address, a partner) and
// refuses one past max. Keys leave the map when their count falls to zero, so it holds
// no more entries than there are requests.
type keyedLimit struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newKeyedLimit(max int) *keyedLimit { return &keyedLimit{max: max, n: map[string]int{}} }

// acquire counts a request for key unless max are counted already.
func (l *keyedLimit) acquire(key string) bool { return l.acquireFair(key, 0) == admitted }

// admission is acquireFair's verdict.
type admission int

const (
	admitted admission = iota
	overMax
	overShare
)

// acquireFair counts a request for key unless max are counted already or, when share
// is positive, key has share counted while other keys have requests too. Checking and
// counting under one lock keeps concurrent requests from all passing the check.
func (l *keyedLimit) acquireFair(key string, share int) admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.n[key]
	switch {
	case held >= l.max:
		return overMax
	case share > 0 && held >= share && len(l.n) > 1:
		return overShare
	}
	l.n[key]++
	return admitted
}

// release ends a request acquire counted.
func (l *keyedLimit) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[key] <= 1 {
		delete(l.n, key)
		return
	}
	l.n[key]--
}

// count is the requests in progress for key.
func (l *keyedLimit) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[key]
}

// remoteHost is the address part of a request's RemoteAddr. Behind a proxy every
// request has the proxy's; the operator raises max_requests_per_address then.
func remoteHost(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

// tooMany answers a request over a per-address or per-partner limit, before its body
// is read.
func (rc *Receiver) tooMany(w http.ResponseWriter, r *http.Request, text string, attrs ...any) {
	rc.log.WarnContext(r.Context(), "AS2 request refused: "+text, append([]any{"remote", r.RemoteAddr}, attrs...)...)
	w.Header().Set("Retry-After", "10")
	w.Header().Set("Connection", "close")
	textAnswer(w, http.StatusTooManyRequests, "busy: "+text+", retry later")
}

// tooSlowText tells a client whose body fell behind the pace what the pace is.
func (rc *Receiver) tooSlowText() string {
	idle := time.Duration(rc.cfg.BodyIdleTimeout)
	if rc.cfg.MinBodyBytesPerSecond == 0 {
		return fmt.Sprintf("the request body stopped for more than %s", idle)
	}
	return fmt.Sprintf("the request body arrived too slowly: it must not stop for %s and must average %d bytes a second after the first %s",
		idle, rc.cfg.MinBodyBytesPerSecond, idle)
}
