package gateway

import (
	"net/http"
	"time"

	"wharf/internal/bodyrate"
)

// Time-outs of the REST and web UI server. Request bodies are paced (bodyrate): one
// that stops for httpBodyIdle, or averages less than httpMinBodyRate after that, ends
// its request, and one a handler answers without reading (an unauthenticated upload)
// is not waited for. There is no write time-out: the UI's live streams last ten
// minutes (net/http lifts the read deadline once a request's body is in, so reads do
// not cut them either).
const (
	httpReadHeaderTimeout = 10 * time.Second
	// httpReadTimeout bounds reading a whole request, a large upload included.
	httpReadTimeout = 30 * time.Minute
	httpIdleTimeout = 2 * time.Minute
	httpBodyIdle    = 30 * time.Second
	httpMinBodyRate = 8 << 10
)

// newHTTPServer is the REST and web UI server around h.
func newHTTPServer(h http.Handler, product func() string) *http.Server {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", product())
		h.ServeHTTP(w, r)
	})
	return &http.Server{
		Handler:           bodyrate.Handler(named, bodyrate.Limits{Idle: httpBodyIdle, MinRate: httpMinBodyRate, Whole: httpReadTimeout}),
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		IdleTimeout:       httpIdleTimeout,
	}
}
