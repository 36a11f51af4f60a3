package as2_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/gateway/gatewaytest"
)

// changeRemote replaces the partner's remote profile with change applied to it.
func (p *peer) changeRemote(partner string, change map[string]any) {
	p.t.Helper()
	var r map[string]any
	p.do("GET", "/api/v1/as2/remote-profiles/"+partner, "", nil, &r)
	for k, v := range change {
		r[k] = v
	}
	p.json("PUT", "/api/v1/as2/remote-profiles/"+partner, r, nil)
}

// Gateway B's receiver serves plain HTTP and, with tls_port, HTTPS with a certificate of
// its own CA; gateway A reaches the HTTPS listener through a pin of that certificate and
// the plain one as before. A wrong pin fails the attempt naming the setting.
func TestGatewaysOverHTTPSAndHTTP(t *testing.T) {
	a, b := startPeer(t, "WHARF-A", ""), startPeer(t, "WHARF-B", "")
	connect(t, a, b)
	plain := b.as2 + "/as2"

	ca := certstest.CA(t, "Gateway B TLS CA")
	leaf := certstest.ServerLeaf(t, ca, "gateway-b-tls", certstest.ECKey(t), "127.0.0.1")
	tlsCert := b.upload(append(certstest.CertsPEM(leaf.Cert), certstest.KeyPEM(t, leaf.Key, "pkcs8")...))
	tlsPort := gatewaytest.FreePort(t)
	const path = "/api/v1/plugins/configs/as2-receiver/as2_receiver_default"
	var cfg map[string]any
	b.do("GET", path, "", nil, &cfg)
	cfg["tls_certificate_id"], cfg["tls_port"] = tlsCert, tlsPort
	b.json("PUT", path, cfg, nil)
	b.json("POST", "/api/v1/services/as2-receiver/as2_receiver_default/restart", map[string]any{}, nil)

	pin := sha256.Sum256(leaf.Cert.Raw)
	setB := func(change map[string]any) { a.changeRemote("b", change) }
	secure := protection{name: "compressed+signed+encrypted", compress: true, sign: true, encrypt: true}
	https := fmt.Sprintf("https://127.0.0.1:%d/as2", tlsPort)
	setB(map[string]any{"endpoint_url": https, "tls_trust": "pinned", "tls_pinned_sha256": hex.EncodeToString(pin[:])})
	sendAndVerify(t, a, b, secure, "sync", true)

	setB(map[string]any{"endpoint_url": plain, "tls_trust": "system", "tls_pinned_sha256": ""})
	sendAndVerify(t, a, b, secure, "sync", true)

	setB(map[string]any{"endpoint_url": https, "tls_trust": "pinned", "tls_pinned_sha256": strings.Repeat("00", 32)})
	var sent messageView
	a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"}, "pinned.txt", []byte("pinned\r\n"), &sent)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got messageView
		a.do("GET", fmt.Sprintf("/api/v1/messages/%d", sent.ID), "", nil, &got)
		if len(got.Deliveries) == 1 && got.Deliveries[0].LastError != "" {
			if e := got.Deliveries[0].LastError; !strings.Contains(e, "tls_pinned_sha256") || !strings.Contains(e, hex.EncodeToString(pin[:])) {
				t.Errorf("wrong pin: %s, want the setting and the server's fingerprint named", e)
			}
			if got.Deliveries[0].State == "delivered" {
				t.Error("delivered through a wrong pin")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d has no error yet: %+v", sent.ID, got.Deliveries)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
