package ui

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSignInCookieSecureBehindHTTPS: behind a proxy that ends TLS the request itself is
// plain http, yet the browser is on https, as the public URL says: the sign-in form's
// cookie is Secure then.
func TestSignInCookieSecureBehindHTTPS(t *testing.T) {
	for _, tt := range []struct {
		publicURL string
		secure    bool
	}{
		{"", false},
		{"http://127.0.0.1:8080", false},
		{"https://wharf.example.com", true},
	} {
		s := newServer(t, newBundle(t), func(d *Deps) { d.PublicURL = tt.publicURL })
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/sign-in", nil))
		var found bool
		for _, c := range rec.Result().Cookies() {
			if c.Name == signInCookie {
				found = true
				if c.Secure != tt.secure {
					t.Errorf("public URL %q: sign-in cookie Secure = %v, want %v", tt.publicURL, c.Secure, tt.secure)
				}
			}
		}
		if !found {
			t.Errorf("public URL %q: no sign-in cookie", tt.publicURL)
		}
	}
}
