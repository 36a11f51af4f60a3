package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence/db/dbtest"
)

func TestCSRF(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	b.signIn(t, b.alice)
	page := b.do(t, http.MethodGet, "/ui/app/", nil, "")
	token := strings.TrimPrefix(page.body, fmt.Sprintf("user=%d csrf=", b.alice.ID))
	wrong := strings.Repeat("A", len(token))

	form := func(tok string) (http.Header, string) {
		v := url.Values{"name": {"acme"}}
		if tok != "" {
			v.Set(CSRFField, tok)
		}
		return http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, v.Encode()
	}
	multi := func(tok string) (http.Header, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("name", "acme")
		mw.WriteField(CSRFField, tok)
		mw.Close()
		return http.Header{"Content-Type": {mw.FormDataContentType()}}, buf.String()
	}
	header := func(tok string) (http.Header, string) {
		return http.Header{CSRFHeader: {tok}, "Content-Type": {"application/x-www-form-urlencoded"}}, "name=acme"
	}

	tests := []struct {
		name    string
		method  string
		path    string
		request func() (http.Header, string)
		want    int
	}{
		{"form with the token", http.MethodPost, "/ui/app/", func() (http.Header, string) { return form(token) }, http.StatusOK},
		{"multipart with the token", http.MethodPost, "/ui/app/", func() (http.Header, string) { return multi(token) }, http.StatusOK},
		{"header with the token", http.MethodPost, "/ui/app/", func() (http.Header, string) { return header(token) }, http.StatusOK},
		{"PUT with the token", http.MethodPut, "/ui/app/", func() (http.Header, string) { return header(token) }, http.StatusOK},
		{"DELETE with the token", http.MethodDelete, "/ui/app/", func() (http.Header, string) { return header(token) }, http.StatusOK},
		{"form without a token", http.MethodPost, "/ui/app/", func() (http.Header, string) { return form("") }, http.StatusForbidden},
		{"form with a wrong token", http.MethodPost, "/ui/app/", func() (http.Header, string) { return form(wrong) }, http.StatusForbidden},
		{"form with a shorter token", http.MethodPost, "/ui/app/", func() (http.Header, string) { return form(token[:10]) }, http.StatusForbidden},
		{"multipart with a wrong token", http.MethodPost, "/ui/app/", func() (http.Header, string) { return multi(wrong) }, http.StatusForbidden},
		{"header with a wrong token", http.MethodPatch, "/ui/app/", func() (http.Header, string) { return header(wrong) }, http.StatusForbidden},
		{"token only in the URL", http.MethodPost, "/ui/app/?" + CSRFField + "=" + token, func() (http.Header, string) { return form("") }, http.StatusForbidden},
		{"JSON body without a header", http.MethodPost, "/ui/app/", func() (http.Header, string) {
			return http.Header{"Content-Type": {"application/json"}}, `{"csrf_token":"` + token + `"}`
		}, http.StatusForbidden},
		{"body over the limit", http.MethodPost, "/ui/app/", func() (http.Header, string) {
			h, body := form(token)
			return h, body + "&pad=" + strings.Repeat("x", testBodyMax)
		}, http.StatusRequestEntityTooLarge},
		{"other method without a token", "PROPFIND", "/ui/app/", func() (http.Header, string) { return nil, "" }, http.StatusForbidden},
		{"GET needs no token", http.MethodGet, "/ui/app/", func() (http.Header, string) { return nil, "" }, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, body := tt.request()
			r := b.do(t, tt.method, tt.path, h, body)
			if r.status != tt.want {
				t.Fatalf("%s = %d %q, want %d", tt.method, r.status, r.body, tt.want)
			}
			switch {
			case tt.want == http.StatusOK && tt.method != http.MethodGet:
				if want := fmt.Sprintf("changed by %d", b.alice.ID); !strings.HasPrefix(r.body, want) {
					t.Errorf("body = %q, want the handler's %q", r.body, want)
				}
			case tt.want == http.StatusForbidden:
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
					t.Errorf("refusal Content-Type = %q, want plain text", ct)
				}
			}
		})
	}
}

func TestCSRFWithoutSession(t *testing.T) {
	// CSRF outside Require has no token to hold a request to, so it refuses.
	h := CSRF(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler ran") }))
	req := httptest.NewRequest(http.MethodPost, "/ui/x", strings.NewReader(CSRFField+"=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("status = %d, want 403", rec.Code)
	}
}

func TestSecurityHeaders(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	want := map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "same-origin",
		"X-Frame-Options":        "DENY",
		"Cache-Control":          "no-store",
	}
	b.signIn(t, b.alice)
	for _, path := range []string{"/ui/sign-in", "/ui/app/", "/ui/missing"} {
		r := b.do(t, http.MethodGet, path, nil, "")
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
}

func TestRequireRedirect(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	tests := []struct {
		method, path string
		want         int
		location     string
	}{
		{http.MethodGet, "/ui/app/messages?status=failed&q=a%20b",
			http.StatusSeeOther, SignInPath + "?next=" + url.QueryEscape("/ui/app/messages?status=failed&q=a%20b")},
		{http.MethodHead, "/ui/app/", http.StatusSeeOther, SignInPath + "?next=" + url.QueryEscape("/ui/app/")},
		{http.MethodPost, "/ui/app/", http.StatusUnauthorized, ""},
		{http.MethodDelete, "/ui/app/", http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		r := b.do(t, tt.method, tt.path, nil, "")
		if r.status != tt.want || r.header.Get("Location") != tt.location {
			t.Errorf("%s %s = %d Location %q; want %d %q", tt.method, tt.path, r.status, r.header.Get("Location"), tt.want, tt.location)
		}
	}
}

// A page renews an idle session's cookie; a live stream lets the session through without
// setting any cookie, so its late answer cannot undo a sign-out.
func TestRequireWithoutRenewal(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	b.signIn(t, b.alice)
	b.clock.Advance(2 * time.Minute)
	live := b.do(t, http.MethodGet, "/ui/live/feed", nil, "")
	if live.status != http.StatusOK || !strings.HasPrefix(live.body, fmt.Sprintf("user=%d ", b.alice.ID)) {
		t.Fatalf("live stream = %d %q", live.status, live.body)
	}
	if c := live.header.Values("Set-Cookie"); len(c) > 0 {
		t.Errorf("the live stream set cookies: %q", c)
	}
	page := b.do(t, http.MethodGet, "/ui/app/", nil, "")
	if page.status != http.StatusOK || len(page.header.Values("Set-Cookie")) == 0 {
		t.Errorf("a page after two idle minutes = %d without renewing the cookie", page.status)
	}
	b.do(t, http.MethodPost, "/ui/sign-out", nil, "")
	if r := b.do(t, http.MethodGet, "/ui/live/feed", nil, ""); r.status != http.StatusSeeOther {
		t.Errorf("live stream after sign-out = %d, want a redirect to sign in", r.status)
	}
}

func TestRequireRedirectsOnlyToLocalPaths(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	h := b.mgr.Require(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler ran") }))
	// A mux cleans such paths first; Require must not rely on that.
	for _, target := range []string{"//evil.example/ui/", "///evil.example"} {
		req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		req.URL.Path = target
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if want := SignInPath + "?next=" + url.QueryEscape(HomePath); rec.Header().Get("Location") != want {
			t.Errorf("GET %s redirects to %q, want %q", target, rec.Header().Get("Location"), want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	tests := []struct {
		next, want string
	}{
		{"/ui/messages", "/ui/messages"},
		{"/ui/messages?status=failed#top", "/ui/messages?status=failed#top"},
		{"/", "/"},
		{"", HomePath},
		{"//evil.example", HomePath},
		{"//evil.example/ui/", HomePath},
		{"/\\evil.example", HomePath},
		{"\\\\evil.example", HomePath},
		{"https://evil.example/ui/", HomePath},
		{"http:/evil.example", HomePath},
		{"javascript:alert(1)", HomePath},
		{"ui/messages", HomePath},
		{"/ui/\r\nSet-Cookie: x=y", HomePath},
		{"/\tevil.example", HomePath},
	}
	for _, tt := range tests {
		if got := SafeNext(tt.next); got != tt.want {
			t.Errorf("SafeNext(%q) = %q, want %q", tt.next, got, tt.want)
		}
	}
}

func TestLimitBody(t *testing.T) {
	var readErr error
	h := LimitBody(8)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, readErr = io.ReadAll(r.Body)
	}))
	req := httptest.NewRequest(http.MethodPost, "/ui/x", strings.NewReader(strings.Repeat("x", 64)))
	h.ServeHTTP(httptest.NewRecorder(), req)
	var mbe *http.MaxBytesError
	if !errors.As(readErr, &mbe) || mbe.Limit != 8 {
		t.Errorf("reading past the limit = %v, want *http.MaxBytesError with limit 8", readErr)
	}
}
