package metrics

import (
	"net/http"
	"strconv"
	"time"

	"wharf/internal/httproute"
)

// unmatchedRoute labels a request no route pattern served.
const unmatchedRoute = "unmatched"

// Instrument times every request h serves under the ServeMux pattern that served it
// (learnt through httproute: the muxes inside are wrapped with httproute.Note), never
// the path, so the route label stays bounded whatever clients ask for.
func (r *Registry) Instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		began := time.Now()
		req, pattern := httproute.Track(req)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			route := pattern()
			if route == "" {
				route = unmatchedRoute
			}
			code := rec.status
			if code == 0 {
				code = http.StatusOK
			}
			r.http.WithLabelValues(route, strconv.Itoa(code)).Observe(time.Since(began).Seconds())
		}()
		h.ServeHTTP(rec, req)
	})
}

// statusRecorder remembers the status of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (the UI's live streams
// flush through it).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
