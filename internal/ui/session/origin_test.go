package session

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	guard, err := SameOrigin("https://wharf.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	tests := []struct {
		name   string
		method string
		host   string
		header map[string]string
		want   int
	}{
		{"GET from another site", http.MethodGet, "wharf.example.com", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusNoContent},
		{"POST from another site", http.MethodPost, "wharf.example.com", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"DELETE from a sibling host", http.MethodDelete, "wharf.example.com", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"POST from the site", http.MethodPost, "wharf.example.com", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusNoContent},
		{"POST typed by the user", http.MethodPost, "wharf.example.com", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusNoContent},
		{"old browser, own host", http.MethodPost, "wharf.example.com", map[string]string{"Origin": "https://wharf.example.com"}, http.StatusNoContent},
		{"old browser, another origin", http.MethodPost, "wharf.example.com", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		// Behind a proxy that rewrites Host, the public URL's origin is still this site.
		{"proxy rewrote Host", http.MethodPost, "10.0.0.5:8080", map[string]string{"Origin": "https://wharf.example.com"}, http.StatusNoContent},
		{"no browser headers", http.MethodPost, "wharf.example.com", nil, http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/ui/partners", nil)
			req.Host = tt.host
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("%s = %d, want %d", tt.name, rec.Code, tt.want)
			}
		})
	}
	if _, err := SameOrigin("wharf.example.com"); err == nil {
		t.Error("SameOrigin took a public URL without a scheme")
	}
}
