package as2_test

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"

	_ "wharf/internal/notification"
)

// refusedView is what the test reads of a refused message over REST.
type refusedView struct {
	ID        int64  `json:"id"`
	Status    string `json:"status"`
	From      string `json:"from"`
	To        string `json:"to"`
	Origin    string `json:"origin_event_id"`
	Protocols struct {
		AS2 struct {
			Direction string `json:"direction"`
			Refusal   struct {
				AS2From      string `json:"as2_from"`
				AS2To        string `json:"as2_to"`
				AS2MessageID string `json:"as2_message_id"`
				Disposition  string `json:"disposition"`
				Reason       string `json:"reason"`
				Count        int    `json:"count"`
			} `json:"refusal"`
		} `json:"as2"`
	} `json:"protocols"`
	Payloads []struct {
		Stage string `json:"stage"`
	} `json:"payloads"`
}

// A whole gateway keeps what a partner sent and it refused as a refused message (REST
// filter, detail with the AS2 refusal, payload downloads), counts requests from AS2 ids
// it does not know as unknown senders, and raises message_refused once per partner
// however many of its messages it refuses.
func TestGatewayKeepsRefusedMessages(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		p := startPeer(t, "WHARF", url)
		own, acme, mallory := as2test.NewIdentity(t, "wharf"), as2test.NewIdentity(t, "acme"), as2test.NewIdentity(t, "mallory")
		ownID := p.upload(append(certstest.CertsPEM(own.Cert), certstest.KeyPEM(t, own.Key, "pkcs8")...))
		acmeID := p.upload(certstest.CertsPEM(acme.Cert))
		p.json("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": "WHARF",
			"signing_certificate_id": ownID, "decryption_certificate_id": ownID}, nil)
		for _, name := range []string{"acme", "beta"} {
			p.json("POST", "/api/v1/partners", map[string]any{"name": name}, nil)
			p.json("POST", "/api/v1/as2/remote-profiles", map[string]any{"partner": name, "as2_id": strings.ToUpper(name),
				"endpoint_url": "http://127.0.0.1:1/as2", "partner_certificate_ids": []int64{acmeID}}, nil)
		}

		post := func(from string, r request) (int, []byte) {
			t.Helper()
			req, err := http.NewRequest("POST", p.as2+"/as2", bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = r.header.Clone()
			req.Header.Set("Content-Type", r.contentType)
			req.Header.Set("AS2-From", from)
			req.Header.Set("AS2-To", "WHARF")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			return resp.StatusCode, b.Bytes()
		}
		doc := []byte("UNH+1+ORDERS:D:96A:UN'\r\n")
		unsigned := build(t, doc, mime.BuildOptions{Encrypt: &mime.Encryption{Recipients: []*x509.Certificate{own.Cert},
			EncryptOptions: cms.EncryptOptions{Cipher: cms.AES256CBC}}})
		badSig := build(t, doc, mime.BuildOptions{
			Sign:    &mime.Signer{Certificate: mallory.Cert, Key: mallory.Key, Digest: cms.SHA256},
			Encrypt: &mime.Encryption{Recipients: []*x509.Certificate{own.Cert}, EncryptOptions: cms.EncryptOptions{Cipher: cms.AES256CBC}}})
		sent := []struct {
			from, disposition string
			r                 request
		}{
			{"ACME", "insufficient-message-security", unsigned},
			{"ACME", "authentication-failed", badSig},
			{"BETA", "insufficient-message-security", build(t, doc, mime.BuildOptions{})},
		}
		for i, s := range sent {
			status, body := post(s.from, s.r)
			if status != http.StatusOK || !bytes.Contains(body, []byte(s.disposition)) {
				t.Fatalf("refusal %d: HTTP %d, want an MDN with %s:\n%s", i, status, s.disposition, body)
			}
		}
		for range 2 {
			if status, _ := post("STRANGER", unsigned); status != http.StatusForbidden {
				t.Fatalf("unknown sender: HTTP %d, want 403", status)
			}
		}

		var list struct {
			Messages []refusedView `json:"messages"`
			Total    int           `json:"total"`
		}
		p.do("GET", "/api/v1/messages?status=refused", "", nil, &list)
		if list.Total != len(sent) {
			t.Fatalf("%d refused messages listed, want %d", list.Total, len(sent))
		}
		for _, m := range list.Messages {
			var d refusedView
			p.do("GET", fmt.Sprintf("/api/v1/messages/%d", m.ID), "", nil, &d)
			ref := d.Protocols.AS2.Refusal
			if d.Status != "refused" || d.To != "local" || ref.AS2To != "WHARF" || ref.AS2MessageID != d.Origin ||
				ref.Reason == "" || !strings.Contains(ref.Disposition, "processed/error: ") || ref.Count != 1 {
				t.Errorf("message %d: %+v", m.ID, d)
			}
			for _, stage := range []string{"received", "headers", "receipt"} {
				status, body := p.gw.API("GET", fmt.Sprintf("/api/v1/messages/%d/payload?stage=%s", m.ID, stage), "", nil)
				if status != http.StatusOK || len(body) == 0 {
					t.Errorf("message %d: stage %s: HTTP %d", m.ID, stage, status)
				}
			}
		}

		var senders struct {
			UnknownSenders []struct {
				SenderID string `json:"sender_id"`
				Count    int    `json:"count"`
			} `json:"unknown_senders"`
		}
		// Counts are written a moment after the answers.
		poll(t, func() bool {
			p.do("GET", "/api/v1/unknown-senders", "", nil, &senders)
			return len(senders.UnknownSenders) == 1 && senders.UnknownSenders[0].Count >= 2
		})
		if len(senders.UnknownSenders) != 1 || senders.UnknownSenders[0].SenderID != "STRANGER" || senders.UnknownSenders[0].Count != 2 {
			t.Errorf("unknown senders = %+v", senders)
		}

		// Alerts are recorded after the answers; the one of BETA, raised last, is
		// recorded after any of ACME.
		var alerts struct {
			Alerts []struct {
				DedupeKey string `json:"dedupe_key"`
			} `json:"alerts"`
		}
		poll(t, func() bool {
			p.do("GET", "/api/v1/alerts?code=message_refused", "", nil, &alerts)
			return len(alerts.Alerts) >= 2
		})
		keys := map[string]int{}
		for _, a := range alerts.Alerts {
			keys[a.DedupeKey]++
		}
		if len(alerts.Alerts) != 2 || keys["message_refused:party:acme"] != 1 || keys["message_refused:party:beta"] != 1 {
			t.Errorf("message_refused alerts by key = %v, want one for acme and one for beta", keys)
		}
	})
}

type request struct {
	contentType string
	header      http.Header
	body        []byte
}

// build protects doc as opts say and asks for a synchronous MDN.
func build(t *testing.T, doc []byte, opts mime.BuildOptions) request {
	t.Helper()
	built, err := mime.Build(doc, "orders.edi", opts)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range built.Header {
		h[k] = v
	}
	h.Set("AS2-Version", "1.2")
	h.Set("Message-ID", fmt.Sprintf("<refused-%d@partner.example>", time.Now().UnixNano()))
	h.Set("Disposition-Notification-To", "edi@partner.example")
	return request{contentType: built.ContentType, header: h, body: built.Body}
}

// poll calls cond until it holds or 20 seconds have passed; the caller then checks what
// cond read.
func poll(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}
