package as2_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"wharf/internal/certs/certstest"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/protocol/as2/as2test"
)

type checkView struct {
	OK    bool `json:"ok"`
	Steps []struct {
		Step   string `json:"step"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"steps"`
}

// failedAt names the first failed step, or "" when every step passed.
func (c checkView) failedAt() string {
	for _, s := range c.Steps {
		if !s.OK {
			return s.Step
		}
	}
	return ""
}

func (p *peer) status(method, path string, body any) (int, []byte) {
	p.t.Helper()
	b, _ := json.Marshal(body)
	return p.gw.API(method, path, "application/json", bytes.NewReader(b))
}

func TestConnectionCheckAndTestMessage(t *testing.T) {
	a := startPeer(t, "WHARF-A", "")
	idA, idB := as2test.NewIdentity(t, "gateway-a"), as2test.NewIdentity(t, "gateway-b")
	own := a.upload(append(certstest.CertsPEM(idA.Cert), certstest.KeyPEM(t, idA.Key, "pkcs8")...))
	partner := a.upload(certstest.CertsPEM(idB.Cert))
	a.json("POST", "/api/v1/partners", map[string]any{"name": "b"}, nil)
	a.json("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": "WHARF-A",
		"signing_certificate_id": own, "decryption_certificate_id": own}, nil)

	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "Partner AS2")
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer tlsServer.Close()
	closed := fmt.Sprintf("http://127.0.0.1:%d/as2", gatewaytest.FreePort(t))
	a.json("POST", "/api/v1/as2/remote-profiles", map[string]any{"partner": "b", "as2_id": "WHARF-B",
		"endpoint_url": closed, "partner_certificate_ids": []int64{partner}}, nil)

	check := func() checkView {
		var c checkView
		a.json("POST", "/api/v1/as2/remote-profiles/b/connection-check", map[string]any{}, &c)
		return c
	}
	setProfile := func(change map[string]any) { a.changeRemote("b", change) }

	if c := check(); c.OK || c.failedAt() != "tcp" {
		t.Fatalf("closed port: %+v, want a failed tcp step", c)
	}
	setProfile(map[string]any{"endpoint_url": tlsServer.URL + "/as2"})
	if c := check(); c.OK || c.failedAt() != "tls" {
		t.Fatalf("untrusted TLS: %+v, want a failed tls step", c)
	}
	serverCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsServer.Certificate().Raw})
	trust := a.upload(serverCert)
	setProfile(map[string]any{"tls_trust_certificate_ids": []int64{trust}})
	c := check()
	if !c.OK || len(c.Steps) != 4 || c.Steps[3].Detail != "reachable; the server answered 405 Method Not Allowed (server Partner AS2) to a probe, which an AS2 endpoint may do — not a verdict on AS2" {
		t.Fatalf("trusted TLS: %+v, want four passed steps", c)
	}
	// A pin replaces the roots: the server's own certificate passes, another is refused
	// with the setting named.
	pin := sha256.Sum256(tlsServer.Certificate().Raw)
	setProfile(map[string]any{"tls_trust": "pinned", "tls_trust_certificate_ids": []int64{}, "tls_pinned_sha256": hex.EncodeToString(pin[:])})
	if c := check(); !c.OK {
		t.Fatalf("pinned TLS: %+v, want every step passed", c)
	}
	setProfile(map[string]any{"tls_pinned_sha256": strings.Repeat("00", 32)})
	if c := check(); c.OK || c.failedAt() != "tls" || !strings.Contains(c.Steps[len(c.Steps)-1].Detail, "tls_trust is pinned") {
		t.Fatalf("wrong pin: %+v, want a failed tls step naming the pin", c)
	}
	setProfile(map[string]any{"tls_trust": "profile", "tls_pinned_sha256": "", "tls_trust_certificate_ids": []int64{trust}})

	var m struct {
		ID         int64  `json:"id"`
		To         string `json:"to"`
		Deliveries []struct {
			Target string `json:"target"`
		} `json:"deliveries"`
	}
	a.json("POST", "/api/v1/as2/remote-profiles/b/test-message", map[string]any{}, &m)
	var detail struct {
		To         string `json:"to"`
		Deliveries []struct {
			Target string `json:"target"`
		} `json:"deliveries"`
	}
	a.do("GET", fmt.Sprintf("/api/v1/messages/%d", m.ID), "", nil, &detail)
	if detail.To != "b" || len(detail.Deliveries) != 1 || detail.Deliveries[0].Target != "as2_sender_default" {
		t.Fatalf("test message = %+v", detail)
	}
	for _, tc := range []struct {
		path string
		body map[string]any
		want int
	}{
		{"/api/v1/as2/remote-profiles/nobody/test-message", map[string]any{}, http.StatusNotFound},
		{"/api/v1/as2/remote-profiles/b/test-message", map[string]any{"sender": "file_writer_default"}, http.StatusBadRequest},
		{"/api/v1/as2/remote-profiles/b/test-message", map[string]any{"colour": "red"}, http.StatusBadRequest},
		{"/api/v1/as2/remote-profiles/nobody/connection-check", map[string]any{}, http.StatusNotFound},
	} {
		if got, body := a.status("POST", tc.path, tc.body); got != tc.want {
			t.Errorf("POST %s %v = %d %s, want %d", tc.path, tc.body, got, body, tc.want)
		}
	}
	// A party its profile names is not deleted under it.
	if got, body := a.status("DELETE", "/api/v1/partners/b", nil); got != http.StatusConflict || !bytes.Contains(body, []byte("PARTY_IN_USE")) {
		t.Errorf("DELETE partner with a profile = %d %s, want 409 PARTY_IN_USE", got, body)
	}
	a.do("DELETE", "/api/v1/as2/remote-profiles/b", "", nil, nil)
	if got, body := a.status("DELETE", "/api/v1/partners/b", nil); got != http.StatusNoContent {
		t.Errorf("DELETE partner without a profile = %d %s, want 204", got, body)
	}
}

// TestReceiverCertificateInUse holds a certificate the receiver serves HTTPS with
// against deletion, and lets it go once the receiver no longer names it.
func TestReceiverCertificateInUse(t *testing.T) {
	a := startPeer(t, "WHARF-A", "")
	id := as2test.NewIdentity(t, "gateway-a")
	cert := a.upload(append(certstest.CertsPEM(id.Cert), certstest.KeyPEM(t, id.Key, "pkcs8")...))
	const path = "/api/v1/plugins/configs/as2-receiver/as2_receiver_default"
	var cfg map[string]any
	a.do("GET", path, "", nil, &cfg)

	cfg["tls_certificate_id"] = 99999
	if got, body := a.status("PUT", path, cfg); got != http.StatusBadRequest || !bytes.Contains(body, []byte("tls_certificate_id")) {
		t.Fatalf("unknown certificate = %d %s, want 400 naming tls_certificate_id", got, body)
	}
	cfg["tls_certificate_id"] = cert
	a.json("PUT", path, cfg, nil)
	certPath := fmt.Sprintf("/api/v1/certificates/%d", cert)
	if got, body := a.status("DELETE", certPath, nil); got != http.StatusConflict || !bytes.Contains(body, []byte("CERTIFICATE_IN_USE")) {
		t.Fatalf("delete a certificate the receiver uses = %d %s, want 409 CERTIFICATE_IN_USE", got, body)
	}
	delete(cfg, "tls_certificate_id")
	a.json("PUT", path, cfg, nil)
	if got, body := a.status("DELETE", certPath, nil); got != http.StatusNoContent {
		t.Fatalf("delete a certificate nobody uses = %d %s, want 204", got, body)
	}
}
