package sender

import (
	"bytes"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// TestJudge covers the receipt rules with MDNs written by the mime package and signed by
// a partner identity.
func TestJudge(t *testing.T) {
	partner, stranger := as2test.NewIdentity(t, "judge-partner"), as2test.NewIdentity(t, "judge-stranger")
	content := []byte("Content-Type: application/edi-x12\r\n\r\nISA*00~")
	const msgID = "<wharf-1-2-abc@wharf.test>"
	signedExp := func() expectation {
		exp, _ := micsFor(content, []cms.DigestAlgorithm{cms.SHA512}, cms.SHA256, false)
		return expectation{MessageID: msgID, SignedMDN: true, MessageSigned: true, Expected: exp,
			Certificates: []*x509.Certificate{partner.Cert}, Now: time.Now()}
	}
	// An unsigned message for which a signed receipt was asked (pyas2-lib, pb-10).
	unsignedSignedMDNExp := func() expectation {
		exp, _ := micsFor(content, []cms.DigestAlgorithm{cms.SHA256}, "", false)
		return expectation{MessageID: msgID, SignedMDN: true, Expected: exp,
			Certificates: []*x509.Certificate{partner.Cert}, Now: time.Now()}
	}
	unsignedExp := func() expectation {
		exp, fb := micsFor(content, nil, "", false)
		return expectation{MessageID: msgID, Expected: exp, Fallback: fb,
			Certificates: []*x509.Certificate{partner.Cert}, Now: time.Now()}
	}
	mic := func(alg cms.DigestAlgorithm) *mime.MIC { m := mime.ComputeMIC(content, alg); return &m }
	wrong := mime.ComputeMIC([]byte("other"), cms.SHA256)
	signer := func(id as2test.Identity) *mime.Signer { return &mime.Signer{Certificate: id.Cert, Key: id.Key} }

	tests := []struct {
		name string
		mdn  mime.MDN
		sign *mime.Signer
		exp  expectation
		// tamper changes the body after signing.
		tamper     func([]byte) []byte
		definitive bool
		accepted   bool
		reason     string
		note       string
	}{
		{name: "requested algorithm", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA512)},
			sign: signer(partner), exp: signedExp(), definitive: true, accepted: true},
		{name: "signature digest", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA256)},
			sign: signer(partner), exp: signedExp(), definitive: true, accepted: true},
		{name: "warning is still processed", mdn: mime.MDN{Disposition: mime.ProcessedWith("warning", "duplicate-document"), ReceivedContentMIC: mic(cms.SHA256)},
			sign: signer(partner), exp: signedExp(), definitive: true, accepted: true},
		{name: "negative disposition", mdn: mime.MDN{Disposition: mime.ProcessedWith("error", "decryption-failed")},
			sign: signer(partner), exp: signedExp(), definitive: true,
			reason: "negative MDN: automatic-action/MDN-sent-automatically; processed/error: decryption-failed"},
		{name: "wrong MIC", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: &wrong},
			sign: signer(partner), exp: signedExp(), definitive: true, reason: "does not match the message sent"},
		{name: "unrequested algorithm", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA384)},
			sign: signer(partner), exp: signedExp(), definitive: true, reason: "neither requested nor used to sign"},
		{name: "signed without MIC", mdn: mime.MDN{Disposition: mime.Processed()},
			sign: signer(partner), exp: signedExp(), definitive: true, reason: "no Received-Content-MIC for a signed message"},
		{name: "signed without MIC for an unsigned message", mdn: mime.MDN{Disposition: mime.Processed()},
			sign: signer(partner), exp: unsignedSignedMDNExp(), definitive: true, accepted: true, note: "receipt without MIC"},
		{name: "signed with a wrong MIC for an unsigned message", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: &wrong},
			sign: signer(partner), exp: unsignedSignedMDNExp(), definitive: true, reason: "does not match the message sent"},
		{name: "signed negative without MIC for an unsigned message", mdn: mime.MDN{Disposition: mime.ProcessedWith("error", "decryption-failed")},
			sign: signer(partner), exp: unsignedSignedMDNExp(), definitive: true, reason: "negative MDN"},
		{name: "another message", mdn: mime.MDN{Disposition: mime.Processed(), OriginalMessageID: "<other@x>", ReceivedContentMIC: mic(cms.SHA256)},
			sign: signer(partner), exp: signedExp(), reason: "answers another message"},
		{name: "signed by a stranger", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA256)},
			sign: signer(stranger), exp: signedExp(), reason: "MDN signature does not verify"},
		{name: "tampered", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA256)},
			sign: signer(partner), exp: signedExp(), reason: "MDN signature does not verify",
			tamper: func(b []byte) []byte { return bytes.Replace(b, []byte("processed"), []byte("processeD"), 1) }},
		{name: "unsigned where signed was asked", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA256)},
			exp: signedExp(), reason: "not signed although a signed receipt was requested"},
		{name: "unsigned without MIC", mdn: mime.MDN{Disposition: mime.Processed()},
			exp: unsignedExp(), definitive: true, accepted: true},
		{name: "unsigned with a MIC of its choice", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA384)},
			exp: unsignedExp(), definitive: true, accepted: true},
		{name: "unsigned SHA-1 not allowed", mdn: mime.MDN{Disposition: mime.Processed(), ReceivedContentMIC: mic(cms.SHA1)},
			exp: unsignedExp(), definitive: true, reason: "the partner profile does not allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.mdn
			if m.OriginalMessageID == "" {
				m.OriginalMessageID = msgID
			}
			ct, body, err := mime.BuildMDN(m, mime.MDNBuildOptions{Sign: tt.sign})
			if err != nil {
				t.Fatal(err)
			}
			if tt.tamper != nil {
				body = tt.tamper(body)
			}
			v := judge(ct, body, tt.exp)
			t.Logf("definitive %v, accepted %v, reason %q", v.Definitive, v.Accepted, v.Reason)
			if v.Definitive != tt.definitive || v.Accepted != tt.accepted {
				t.Errorf("definitive %v accepted %v, want %v %v", v.Definitive, v.Accepted, tt.definitive, tt.accepted)
			}
			if !strings.Contains(v.Reason, tt.reason) || (tt.reason == "") != (v.Reason == "") {
				t.Errorf("reason %q, want it to contain %q", v.Reason, tt.reason)
			}
			if !strings.HasPrefix(v.Note, tt.note) || (tt.note == "") != (v.Note == "") {
				t.Errorf("note %q, want it to begin with %q", v.Note, tt.note)
			}
			// A refusal says what to do about it.
			if _, advice, _ := strings.Cut(v.Reason, "; "); v.Reason != "" && !containsAny(advice, "ask the partner", "check ", "allow ", "turn off", "resolve ", "compare ") {
				t.Errorf("reason %q says nothing to do", v.Reason)
			}
		})
	}
}

func TestPeekOriginalMessageID(t *testing.T) {
	partner := as2test.NewIdentity(t, "judge-partner")
	for _, sign := range []*mime.Signer{nil, {Certificate: partner.Cert, Key: partner.Key}} {
		ct, body, err := mime.BuildMDN(mime.MDN{OriginalMessageID: "<a@b>", Disposition: mime.Processed()}, mime.MDNBuildOptions{Sign: sign})
		if err != nil {
			t.Fatal(err)
		}
		got, err := peekOriginalMessageID(ct, body)
		if err != nil || got != "<a@b>" {
			t.Errorf("signed %v: %q, %v", sign != nil, got, err)
		}
	}
	if _, err := peekOriginalMessageID("text/plain", []byte("hello")); err == nil {
		t.Error("a text body passed as an MDN")
	}
}

func TestRequestHeader(t *testing.T) {
	built := &mime.Built{ContentType: `application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"`,
		Header: http.Header{"Content-Disposition": {`attachment; filename="smime.p7m"`}}}
	date := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		p    headerParams
		want map[string]string // "" means absent
	}{
		{"sync signed", headerParams{MessageID: "<m@x>", From: "WHARF ORG", To: "ACME", Subject: "s", Date: date,
			MDNMode: profile.MDNSync, SignedMDN: true, MICAlgorithm: cms.SHA384, NotifyTo: "as2@x"},
			map[string]string{
				"AS2-Version": "1.2", "AS2-From": `"WHARF ORG"`, "AS2-To": "ACME", "Message-ID": "<m@x>",
				"Date": "Mon, 30 Nov 2026 09:00:00 +0000", "MIME-Version": "1.0", "Content-Type": built.ContentType,
				"Content-Disposition":              `attachment; filename="smime.p7m"`,
				"Disposition-Notification-To":      "as2@x",
				"Disposition-Notification-Options": "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-384",
				"Receipt-Delivery-Option":          "", "EDIINT-Features": "AS2-Reliability",
			}},
		{"async unsigned", headerParams{MessageID: "<m@x>", From: "A.B", To: "C@D", Date: date,
			MDNMode: profile.MDNAsync, NotifyTo: "as2@x", AsyncURL: "https://wharf.test/as2/mdn"},
			map[string]string{
				"AS2-From": `"A.B"`, "AS2-To": `"C@D"`, "Disposition-Notification-To": "as2@x",
				"Disposition-Notification-Options": "", "Receipt-Delivery-Option": "https://wharf.test/as2/mdn",
			}},
		{"no receipt", headerParams{MessageID: "<m@x>", From: "A", To: "B", Date: date, MDNMode: profile.MDNNone, NotifyTo: "as2@x"},
			map[string]string{"Disposition-Notification-To": "", "Disposition-Notification-Options": "", "Receipt-Delivery-Option": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := requestHeader(built.ContentType, built.Header, tt.p)
			for name, want := range tt.want {
				got, ok := h[name]
				if want == "" {
					if ok {
						t.Errorf("%s: %q, want none", name, got)
					}
					continue
				}
				if !ok || len(got) != 1 || got[0] != want {
					t.Errorf("%s: %q, want %q (the name spelled as written)", name, got, want)
				}
			}
		})
	}
}

func TestMessageIDs(t *testing.T) {
	a, b := newMessageID("wharf.test", 7, 9), newMessageID("wharf.test", 7, 9)
	if a == b || !strings.HasPrefix(a, "<wharf-7-9-") || !strings.HasSuffix(a, "@wharf.test>") {
		t.Errorf("Message-IDs %s and %s", a, b)
	}
	for _, tt := range []struct{ configured, base, want string }{
		{"", "https://gw.example.com:8443/", "gw.example.com"},
		{"as2.example.com", "https://gw.example.com/", "as2.example.com"},
		{"", "http://[::1]:8080", "localhost"},
		{"", "", "localhost"},
	} {
		if got := messageIDDomain(tt.configured, tt.base); got != tt.want {
			t.Errorf("messageIDDomain(%q, %q) = %q, want %q", tt.configured, tt.base, got, tt.want)
		}
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
