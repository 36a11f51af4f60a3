package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"wharf/internal/persistence"
)

// A page whose database read failed for want of the database answers 503 with a
// Retry-After, not a 500.
func TestFailAnswersUnavailableDatabase(t *testing.T) {
	s := newServer(t, newBundle(t), nil)
	for _, tc := range []struct {
		err    error
		status int
	}{
		{fmt.Errorf("list messages: %w", errors.Join(persistence.ErrUnavailable, errors.New("connection refused"))), http.StatusServiceUnavailable},
		{errors.New("boom"), http.StatusInternalServerError},
	} {
		w := httptest.NewRecorder()
		s.fail(w, httptest.NewRequest("GET", "/ui/messages", nil), tc.err)
		if w.Code != tc.status {
			t.Errorf("%v: status %d, want %d", tc.err, w.Code, tc.status)
		}
		if tc.status == http.StatusServiceUnavailable && (w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "database is unavailable")) {
			t.Errorf("503 without Retry-After or reason: %q", w.Body.String())
		}
	}
}
