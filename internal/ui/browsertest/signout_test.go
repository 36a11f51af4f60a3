package browsertest

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSignOutEndsTheSessionOnTheServer replays a cookie copied before sign-out, with the
// session's CSRF token, against a whole gateway: it opens no page and creates no API
// token, and the same holds after signing out everywhere.
func TestSignOutEndsTheSessionOnTheServer(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	for _, tt := range []struct{ name, path string }{
		{"sign out", "/ui/sign-out"},
		{"sign out everywhere", "/ui/account/sign-out-everywhere"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			user := strings.ReplaceAll(tt.name, " ", "-")
			c, _ := h.signedIn(t, user)
			base, _ := url.Parse(h.base + "/ui/")
			copied := c.http.Jar.Cookies(base)
			if len(copied) == 0 {
				t.Fatal("no session cookie after sign-in")
			}
			if r := c.post(t, tt.path, nil); r.status != http.StatusSeeOther {
				t.Fatalf("POST %s = %d", tt.path, r.status)
			}

			thief := h.client()
			thief.http.Jar.SetCookies(base, copied)
			thief.csrf = c.csrf
			if r := thief.get(t, "/ui/tokens"); r.status != http.StatusSeeOther ||
				!strings.HasPrefix(r.header.Get("Location"), "/ui/sign-in") {
				t.Errorf("GET /ui/tokens with the copied cookie = %d Location %q; want the sign-in page",
					r.status, r.header.Get("Location"))
			}
			if r := thief.post(t, "/ui/tokens", url.Values{"name": {"stolen-" + user}}); r.status != http.StatusUnauthorized {
				t.Errorf("POST /ui/tokens with the copied cookie = %d; want 401", r.status)
			}
			// The REST API takes no cookie at all: the copied one is 401 there too.
			req, _ := http.NewRequest(http.MethodGet, h.base+"/api/v1/settings", nil)
			for _, ck := range copied {
				req.AddCookie(ck)
			}
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Fatal(err)
			} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET /api/v1/settings with the copied cookie = %d; want 401", resp.StatusCode)
			}
			tokens, err := h.g.Store.ListAPITokens(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range tokens {
				if tok.Name == "stolen-"+user {
					t.Errorf("the copied cookie created API token %q", tok.Name)
				}
			}
		})
	}
}

// TestCrossOriginFormsRefused posts the UI's forms as another site's page would: the
// browser's Sec-Fetch-Site or Origin gives it away even with a valid session and token,
// while the site's own pages and clients that send neither header get through.
func TestCrossOriginFormsRefused(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "origin")
	tests := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"cross-site fetch metadata", http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"same-site fetch metadata", http.Header{"Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
		{"foreign Origin, no fetch metadata", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"opaque Origin", http.Header{"Origin": {"null"}}, http.StatusForbidden},
		{"same-origin fetch metadata", http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {h.base}}, http.StatusOK},
		{"own Origin, no fetch metadata", http.Header{"Origin": {h.base}}, http.StatusOK},
		{"neither header", http.Header{}, http.StatusOK},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := url.Values{"name": {"origin-" + string(rune('a'+i))}, "csrf_token": {c.csrf}}
			req, err := http.NewRequest(http.MethodPost, h.base+"/ui/tokens", strings.NewReader(form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tt.header
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := c.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("POST /ui/tokens = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	// The sign-in form has no session yet: another site cannot post it either.
	req, _ := http.NewRequest(http.MethodPost, h.base+"/ui/sign-in", strings.NewReader("name=origin&password=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST /ui/sign-in = %d, want 403", resp.StatusCode)
	}
}
