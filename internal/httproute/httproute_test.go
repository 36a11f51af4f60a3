package httproute_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"wharf/internal/httproute"
)

// The innermost mux's pattern is reported, through handlers that copy the request, and
// nothing for a request no noted mux matched.
func TestInnermostPatternWins(t *testing.T) {
	inner := http.NewServeMux()
	inner.HandleFunc("GET /api/v1/messages/{id}", func(w http.ResponseWriter, r *http.Request) {})
	copying := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httproute.Note(inner).ServeHTTP(w, r.WithContext(r.Context()))
	})
	outer := http.NewServeMux()
	outer.Handle("/api/", copying)
	outer.HandleFunc("GET /plain", func(w http.ResponseWriter, r *http.Request) {})
	h := httproute.Note(outer)
	for _, tt := range []struct{ path, want string }{
		{"/api/v1/messages/42", "GET /api/v1/messages/{id}"},
		{"/api/v1/other", "/api/"}, // the inner mux answers 404 with no pattern
		{"/plain", "GET /plain"},
		{"/nothing", ""},
	} {
		r, pattern := httproute.Track(httptest.NewRequest("GET", tt.path, nil))
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got := pattern(); got != tt.want {
			t.Errorf("%s: pattern %q, want %q", tt.path, got, tt.want)
		}
	}
	// A request nobody tracks is served as before.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/plain", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("untracked request: %d", rec.Code)
	}
}

// Middleware that tracks inside middleware that tracks: both learn the pattern.
func TestNestedTrackersBothLearnThePattern(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/routes/{id}", func(w http.ResponseWriter, r *http.Request) {})
	var inner string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, pattern := httproute.Track(r)
		httproute.Note(mux).ServeHTTP(w, r)
		inner = pattern()
	})
	r, outer := httproute.Track(httptest.NewRequest("GET", "/api/v1/routes/7", nil))
	h.ServeHTTP(httptest.NewRecorder(), r)
	const want = "GET /api/v1/routes/{id}"
	if inner != want || outer() != want {
		t.Fatalf("inner %q, outer %q; want %q for both", inner, outer(), want)
	}
}
