package as2_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/protocol/as2/as2test"
)

// setupPartner gives p a local profile and the partner "x" (AS2 id PARTNER-X) sending and
// receiving at endpoint without signing, encryption or a signed MDN.
func setupPartner(t *testing.T, p *peer, endpoint string) {
	t.Helper()
	own := as2test.NewIdentity(t, "hostile-test-own")
	partner := as2test.NewIdentity(t, "hostile-test-partner")
	ownID := p.upload(append(certstest.CertsPEM(own.Cert), certstest.KeyPEM(t, own.Key, "pkcs8")...))
	partnerID := p.upload(certstest.CertsPEM(partner.Cert))
	p.json("POST", "/api/v1/partners", map[string]any{"name": "x", "display_name": "Partner X"}, nil)
	p.json("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": p.name,
		"signing_certificate_id": ownID, "decryption_certificate_id": ownID}, nil)
	p.json("POST", "/api/v1/as2/remote-profiles", map[string]any{"partner": "x", "as2_id": "PARTNER-X",
		"endpoint_url": endpoint, "partner_certificate_ids": []int64{partnerID},
		"compress": false, "signing_algorithm": "none", "encryption_algorithm": "none",
		"mdn_mode": "sync", "signed_mdn": false, "require_signed": false, "require_encrypted": false}, nil)
}

// TestUnpaddedBase64Inbound sends AS2 requests whose body is the unpadded base64 "QQ" at
// each layer a partner can put it: every one is answered with an MDN on a connection
// that stays open for the next request.
func TestUnpaddedBase64Inbound(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
	}{
		{name: "plain document", contentType: "application/edi-x12", body: "QQ"},
		{name: "enveloped data", contentType: "application/pkcs7-mime; smime-type=enveloped-data", body: "QQ"},
		{name: "compressed data", contentType: "application/pkcs7-mime; smime-type=compressed-data", body: "QQ"},
		{name: "signed part", contentType: `multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; boundary="s"`,
			body: "--s\r\nContent-Type: application/edi-x12\r\nContent-Transfer-Encoding: base64\r\n\r\nQQ\r\n" +
				"--s\r\nContent-Type: application/pkcs7-signature\r\nContent-Transfer-Encoding: base64\r\n\r\nQQ\r\n--s--\r\n"},
	}
	eachGatewayDB(t, func(t *testing.T, dbURL string) {
		b := startPeer(t, "WHARF-B", dbURL)
		setupPartner(t, b, "http://127.0.0.1:1/as2")
		client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1}}
		var conns atomic.Int32
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
					if !info.Reused {
						conns.Add(1)
					}
				}}
				ctx := httptrace.WithClientTrace(context.Background(), trace)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.as2+"/as2", strings.NewReader(tt.body))
				req.Header.Set("AS2-Version", "1.2")
				req.Header.Set("AS2-From", "PARTNER-X")
				req.Header.Set("AS2-To", b.name)
				req.Header.Set("Message-ID", fmt.Sprintf("<hostile-%d@partner.test>", i))
				req.Header.Set("Content-Type", tt.contentType)
				req.Header.Set("Content-Transfer-Encoding", "base64")
				req.Header.Set("Disposition-Notification-To", "as2@partner.test")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("the request got no answer: %v", err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("the answer broke off: %v", err)
				}
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/report") ||
					!bytes.Contains(body, []byte("Disposition: automatic-action/MDN-sent-automatically")) {
					t.Fatalf("answer %d %s:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
			})
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("%d connections for %d requests: the receiver dropped one", n, len(tests))
		}
	})
}

// TestUnpaddedBase64PartnerMDN sends to a partner whose synchronous MDN has a text part in
// unpadded base64: the MDN is read and settles the delivery at the first attempt.
func TestUnpaddedBase64PartnerMDN(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, dbURL string) {
		var requests atomic.Int32
		partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", `multipart/report; report-type=disposition-notification; boundary="r"`)
			fmt.Fprintf(w, "--r\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\nQQ\r\n"+
				"--r\r\nContent-Type: message/disposition-notification\r\n\r\n"+
				"Reporting-UA: hostile partner\r\nOriginal-Recipient: rfc822; PARTNER-X\r\nFinal-Recipient: rfc822; PARTNER-X\r\n"+
				"Original-Message-ID: %s\r\nDisposition: automatic-action/MDN-sent-automatically; processed\r\n\r\n--r--\r\n",
				r.Header.Get("Message-ID"))
		}))
		t.Cleanup(partner.Close)
		a := startPeer(t, "WHARF-A", dbURL)
		setupPartner(t, a, partner.URL+"/as2")

		var sent messageView
		a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "x", "target": "as2_sender_default"}, "po.edi", []byte("PO 1\r\n"), &sent)
		deadline := time.Now().Add(20 * time.Second)
		var got messageView
		for {
			a.do("GET", fmt.Sprintf("/api/v1/messages/%d", sent.ID), "", nil, &got)
			if len(got.Deliveries) == 1 && got.Deliveries[0].State != "queued" && got.Deliveries[0].State != "delivering" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d not settled: %+v", sent.ID, got.Deliveries)
			}
			time.Sleep(20 * time.Millisecond) // polling interval
		}
		if got.Deliveries[0].State != "delivered" || requests.Load() != 1 {
			t.Fatalf("delivery %s (%s) after %d requests; want delivered at the first",
				got.Deliveries[0].State, got.Deliveries[0].LastError, requests.Load())
		}
	})
}
