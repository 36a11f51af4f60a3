package browsertest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// headerLog is a loopback listener that records the Authorization header of every
// request it gets.
type headerLog struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newHeaderLog(t *testing.T) *headerLog {
	l := &headerLog{}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Get("Authorization"))
		l.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *headerLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// putJSON sends a JSON body to the REST API and returns the status and the error's
// details by field, if any.
func (h *harness) putJSON(t *testing.T, method, path string, body any) (int, map[string]string, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	code, data := h.api(method, path, "application/json", bytes.NewReader(b))
	var e struct {
		Error struct {
			Code    string            `json:"code"`
			Details map[string]string `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return code, e.Error.Details, string(data)
}

// TestSecretsStayBoundToTheirDestination changes where write-only secrets are sent,
// over REST and in the UI's forms, against a whole gateway: a URL on another origin (an
// issuer, for a provider) without the secret entered again is refused with a field error
// and nothing changes; the listener at the new URL never sees the stored secret; a new
// path keeps it; entering it again with the new URL is accepted.
func TestSecretsStayBoundToTheirDestination(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "binder")
	h.mustJSON("POST", "/api/v1/partners", map[string]any{"name": "b"}, nil)
	home, other := newHeaderLog(t), newHeaderLog(t)
	const refusal = "enter it again"

	t.Run("http-poster", func(t *testing.T) {
		secret := canary(t, "poster")
		h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{
			"name": "poster_bound", "enabled": true, "url": home.URL + "/in",
			"secret_headers": map[string]string{"Authorization": secret},
		}, nil)
		h.mustJSON("POST", "/api/v1/services/http-poster/poster_bound/start", map[string]any{}, nil)
		const path = "/api/v1/plugins/configs/http-poster/poster_bound"

		code, details, raw := h.putJSON(t, "PUT", path, map[string]any{"enabled": true, "url": other.URL + "/in"})
		if code != http.StatusBadRequest || !strings.HasPrefix(details["secret_headers"], refusal) {
			t.Fatalf("REST: URL to another port without the secret = %d %s; want 400 on secret_headers", code, raw)
		}
		form := c.post(t, "/ui/plugins/http-poster/poster_bound", url.Values{"enabled": {"true"}, "url": {other.URL + "/in"}})
		if form.status != http.StatusUnprocessableEntity || !strings.Contains(form.body, `id="cfg-secret_headers-error">`+refusal) {
			t.Fatalf("UI: URL to another port without the secret = %d; want 422 with the error beside secret_headers\n%s", form.status, form.body)
		}
		var cfg struct {
			URL string `json:"url"`
		}
		h.mustJSON("GET", path, nil, &cfg)
		if cfg.URL != home.URL+"/in" {
			t.Fatalf("a refused change was stored: url %s", cfg.URL)
		}
		h.waitStatus(h.sendMessage("local", "b", "poster_bound", "one.xml", "<one/>"), "delivered")
		if got := home.got(); len(got) != 1 || got[0] != secret {
			t.Errorf("the configured listener got %q; want the secret once", got)
		}

		// A new path on the same origin keeps the secret.
		if code, _, raw := h.putJSON(t, "PUT", path, map[string]any{"enabled": true, "url": home.URL + "/other"}); code != http.StatusOK {
			t.Fatalf("REST: new path only = %d %s; want it accepted", code, raw)
		}
		// Entering the secret again with the new URL is accepted, and only the new one goes there.
		fresh := canary(t, "fresh")
		form = c.post(t, "/ui/plugins/http-poster/poster_bound", url.Values{"enabled": {"true"}, "url": {other.URL + "/in"},
			"secret_headers": {"Authorization: " + fresh}})
		if form.status != http.StatusSeeOther {
			t.Fatalf("UI: new URL with the secret entered again = %d\n%s", form.status, form.body)
		}
		h.mustJSON("POST", "/api/v1/services/http-poster/poster_bound/restart", map[string]any{}, nil)
		h.waitStatus(h.sendMessage("local", "b", "poster_bound", "two.xml", "<two/>"), "delivered")
		if got := other.got(); len(got) != 1 || got[0] != fresh {
			t.Errorf("the new listener got %q; want only the secret entered with its URL", got)
		}
	})

	t.Run("notification-webhook", func(t *testing.T) {
		h.mustJSON("POST", "/api/v1/plugins/configs/notification-webhook", map[string]any{
			"name": "notify_bound", "enabled": true, "url": home.URL + "/alerts",
			"headers": map[string]string{"Authorization": canary(t, "notifier")}, "signing_secret": "whsec_" + "c2VjcmV0c2VjcmV0c2VjcmV0",
		}, nil)
		const path = "/api/v1/plugins/configs/notification-webhook/notify_bound"
		code, details, raw := h.putJSON(t, "PUT", path, map[string]any{"enabled": true, "url": other.URL + "/alerts"})
		if code != http.StatusBadRequest || !strings.HasPrefix(details["headers"], refusal) || !strings.HasPrefix(details["signing_secret"], refusal) {
			t.Fatalf("REST: URL to another port without the secrets = %d %s; want 400 on headers and signing_secret", code, raw)
		}
		form := c.post(t, "/ui/plugins/notification-webhook/notify_bound", url.Values{"enabled": {"true"}, "url": {other.URL + "/alerts"}})
		if form.status != http.StatusUnprocessableEntity || !strings.Contains(form.body, `id="cfg-headers-error">`+refusal) {
			t.Fatalf("UI: URL to another port without the secrets = %d; want 422 with the error beside headers\n%s", form.status, form.body)
		}
		if code, _, raw := h.putJSON(t, "PUT", path, map[string]any{"enabled": true, "url": other.URL + "/alerts",
			"headers": map[string]string{}, "signing_secret": ""}); code != http.StatusOK {
			t.Fatalf("REST: new URL with the secrets cleared = %d %s; want it accepted", code, raw)
		}
	})

	t.Run("identity provider", func(t *testing.T) {
		issuer := home.URL + "/realms/corp"
		h.mustJSON("POST", "/api/v1/identity-providers", map[string]any{
			"name": "corp", "issuer_url": issuer, "client_id": "wharf", "client_secret": canary(t, "oidc"),
		}, nil)
		moved := map[string]any{"issuer_url": home.URL + "/realms/evil", "client_id": "wharf"}
		code, details, raw := h.putJSON(t, "PUT", "/api/v1/identity-providers/corp", moved)
		if code != http.StatusBadRequest || !strings.HasPrefix(details["client_secret"], refusal) {
			t.Fatalf("REST: another issuer without the secret = %d %s; want 400 on client_secret", code, raw)
		}
		form := c.post(t, "/ui/identity-providers/corp", url.Values{"issuer_url": {other.URL}, "client_id": {"wharf"}, "enabled": {"true"}})
		if form.status != http.StatusUnprocessableEntity || !strings.Contains(form.body, `id="client_secret-error">`+refusal) {
			t.Fatalf("UI: another issuer without the secret = %d; want 422 with the error beside client_secret\n%s", form.status, form.body)
		}
		var p struct {
			IssuerURL string `json:"issuer_url"`
		}
		h.mustJSON("GET", "/api/v1/identity-providers/corp", nil, &p)
		if p.IssuerURL != issuer {
			t.Fatalf("a refused change was stored: issuer %s", p.IssuerURL)
		}
		moved["client_secret"] = canary(t, "oidc-again")
		if code, _, raw := h.putJSON(t, "PUT", "/api/v1/identity-providers/corp", moved); code != http.StatusOK {
			t.Fatalf("REST: another issuer with the secret entered again = %d %s", code, raw)
		}
	})
}
