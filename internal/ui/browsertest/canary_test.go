package browsertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"wharf/internal/api"
	"wharf/internal/audit"
	"wharf/internal/auth/oidc/oidctest"
	"wharf/internal/certs/certstest"
)

func canary(t *testing.T, what string) string {
	t.Helper()
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "canary-" + what + "-" + hex.EncodeToString(b[:])
}

// keyCanary is a line from the middle of a private key's PEM: text that only a leak of
// the key itself shows.
func keyCanary(t *testing.T, keyPEM []byte) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(keyPEM)), "\n")
	if len(lines) < 5 {
		t.Fatalf("short key PEM")
	}
	return lines[len(lines)/2]
}

// uploadCertificate posts a certificate file through REST and returns the answer.
func (h *harness) uploadCertificate(file []byte, password string) []byte {
	h.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "upload")
	_, _ = fw.Write(file)
	if password != "" {
		_ = mw.WriteField("password", password)
	}
	_ = mw.Close()
	code, data := h.api("POST", "/api/v1/certificates", mw.FormDataContentType(), &buf)
	if code != http.StatusCreated {
		h.t.Fatalf("upload certificate = %d: %s", code, data)
	}
	return data
}

// TestSecretCanaries stores secrets of every kind, uses them, then requires that none
// appears in a page of the crawl, a REST answer or a log line.
func TestSecretCanaries(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	secrets := map[string]string{"password": testPassword}
	var answers []string // REST answers, beside the pages the client keeps

	// A user's password and TOTP secret: the secret is shown by the set-up page alone.
	c, totpSecret := h.signedIn(t, "alice")
	secrets["TOTP secret"] = totpSecret

	// A PKCS#12 upload's password and key, and a PEM key.
	ca := certstest.CA(t, "Canary CA")
	p12Leaf := certstest.ValidLeaf(t, ca, "p12.canary.example", certstest.RSAKey(t))
	p12Password := canary(t, "p12")
	secrets["PKCS#12 password"] = p12Password
	secrets["PKCS#12 key"] = keyCanary(t, certstest.KeyPEM(t, p12Leaf.Key, "pkcs8"))
	answers = append(answers, string(h.uploadCertificate(certstest.OpenSSLPKCS12(t, p12Leaf, nil, p12Password), p12Password)))
	pemLeaf := certstest.ValidLeaf(t, ca, "pem.canary.example", certstest.RSAKey(t))
	keyPEM := certstest.KeyPEM(t, pemLeaf.Key, "pkcs8")
	secrets["PEM key"] = keyCanary(t, keyPEM)
	answers = append(answers, string(h.uploadCertificate(append(certstest.CertsPEM(pemLeaf.Cert), keyPEM...), "")))

	// An API token in use.
	token := canary(t, "token")
	secrets["API token"] = token
	if _, err := h.g.Store.CreateAPIToken(ctx, "canary", api.HashToken(token)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/v1/health", "/api/v1/nothing-here"} {
		req, _ := http.NewRequest("GET", h.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		answers = append(answers, headerText(resp.Header)+b.String())
	}

	// A write-only plugin field, used by a delivery that fails.
	header := canary(t, "header")
	secrets["secret header"] = header
	got := make(chan string, 10)
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("X-Api-Key"):
		default:
		}
		http.Error(w, "refused", http.StatusInternalServerError)
	}))
	defer partner.Close()
	answers = append(answers, string(h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{
		"name": "poster_canary", "enabled": true, "url": partner.URL + "/in",
		"secret_headers": map[string]string{"X-Api-Key": header},
	}, nil)))
	h.mustJSON("POST", "/api/v1/services/http-poster/poster_canary/start", map[string]any{}, nil)

	// An identity provider's client secret, used by a single sign-on.
	clientSecret := canary(t, "oidc")
	secrets["OIDC client secret"] = clientSecret
	sso := oidctest.New("wharf", clientSecret)
	defer sso.Close()
	answers = append(answers, string(h.mustJSON("POST", "/api/v1/identity-providers", map[string]any{
		"name": "corp", "issuer_url": sso.Issuer, "client_id": "wharf", "client_secret": clientSecret,
	}, nil)))
	sc := h.client()
	sc.ssoSignIn(t, "corp")

	id := populate(t, h, c)
	failing := h.sendMessage("acme", "b", "poster_canary", "order-2.xml", "<order>2</order>")
	select {
	case v := <-got:
		if v != header {
			t.Fatalf("the partner got X-Api-Key %q, want the stored secret", v)
		}
	case <-time.After(30 * time.Second):
		_, m := h.api("GET", fmt.Sprintf("/api/v1/messages/%d", failing), "", nil)
		t.Fatalf("the http-poster did not post within 30 s: %s", m)
	}
	h.waitStatus(failing, "retrying")

	crawl(t, c)
	for _, path := range []string{
		"/api/v1/certificates", "/api/v1/certificates/1", "/api/v1/certificates/2",
		"/api/v1/plugins/configs/http-poster", "/api/v1/plugins/configs/http-poster/poster_canary",
		"/api/v1/messages", fmt.Sprintf("/api/v1/messages/%d", id), fmt.Sprintf("/api/v1/messages/%d", failing),
		"/api/v1/as2/remote-profiles", "/api/v1/as2/local-profiles", "/api/v1/settings", "/api/v1/services",
		"/api/v1/openapi.yaml", "/api/v1/identity-providers", "/api/v1/identity-providers/corp",
		"/api/v1/audit?limit=1000",
	} {
		code, data := h.api("GET", path, "", nil)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d", path, code)
		}
		answers = append(answers, string(data))
	}

	// Every page the client was answered, except the set-up form that shows the TOTP
	// secret so the user can type it into an app.
	var pages []string
	c.mu.Lock()
	sc.mu.Lock()
	for _, p := range append(sc.seen, c.seen...) {
		if !strings.HasPrefix(p, "GET /ui/setup/") {
			pages = append(pages, p)
		}
	}
	sc.mu.Unlock()
	c.mu.Unlock()
	if len(pages) < 20 {
		t.Fatalf("only %d pages seen; the crawl did not run", len(pages))
	}
	// The audit log recorded every change above, secrets only as changed.
	var events strings.Builder
	if err := h.g.Store.EachAudit(ctx, 0, func(e audit.Event) error {
		return json.NewEncoder(&events).Encode(e)
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(events.String(), `"secret":true`) {
		t.Fatalf("the audit log records no secret change:\n%s", events.String())
	}
	answers = append(answers, events.String())
	logs := h.logs.String()
	if !strings.Contains(logs, "level=") {
		t.Fatal("no log lines were captured")
	}
	for what, secret := range secrets {
		for _, p := range pages {
			if strings.Contains(p, secret) {
				t.Errorf("the %s appears in the page %s", what, strings.SplitN(p, "\n", 2)[0])
			}
		}
		for _, a := range answers {
			if strings.Contains(a, secret) {
				t.Errorf("the %s appears in a REST answer: %.200s", what, a)
			}
		}
		if strings.Contains(logs, secret) {
			t.Errorf("the %s appears in the log", what)
		}
	}
}
