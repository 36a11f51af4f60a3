// Package httproute carries the http.ServeMux pattern that served a request out to the
// middleware around the muxes (the metrics' route label). A mux sets Request.Pattern only
// on the request it was handed, and the handlers in between hand on copies (WithContext),
// so the middleware outside never sees it: each mux wrapped with Note writes its pattern
// into a holder the middleware put in the context, the innermost first.
package httproute

import (
	"context"
	"net/http"
	"sync"
)

type holderKey struct{}

type holder struct {
	mu      sync.Mutex
	pattern string
}

// Track prepares r to learn its pattern; the function returns the pattern of the
// innermost noted mux that matched it once the request is served, "" when none did.
// Middleware nested in middleware that tracks already shares the outer one's holder, so
// each learns the pattern.
func Track(r *http.Request) (*http.Request, func() string) {
	h, ok := r.Context().Value(holderKey{}).(*holder)
	if !ok {
		h = &holder{}
		r = r.WithContext(context.WithValue(r.Context(), holderKey{}, h))
	}
	return r, func() string {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.pattern
	}
}

// Note serves r with mux and then records the pattern mux matched, unless a mux inside
// it recorded one already.
func Note(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		h, ok := r.Context().Value(holderKey{}).(*holder)
		if !ok || r.Pattern == "" {
			return
		}
		h.mu.Lock()
		if h.pattern == "" {
			h.pattern = r.Pattern
		}
		h.mu.Unlock()
	})
}
