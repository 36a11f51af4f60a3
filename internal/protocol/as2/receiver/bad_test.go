package receiver

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// request is an AS2 request a test sends.
type request struct {
	contentType string
	header      http.Header
	body        []byte
}

var messageSeq atomic.Int64

// as2Header is what a partner sends with a message asking for a signed sync MDN.
func as2Header(from, to profile.AS2ID) http.Header {
	h := http.Header{}
	h.Set("AS2-From", string(from))
	h.Set("AS2-To", string(to))
	h.Set("AS2-Version", "1.2")
	h.Set("Message-ID", fmt.Sprintf("<test-%d@%s.example>", messageSeq.Add(1), strings.ToLower(string(from))))
	h.Set("Disposition-Notification-To", "edi@example.com")
	h.Set("Disposition-Notification-Options", "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256")
	h.Set("User-Agent", "test partner 1.0")
	return h
}

// build protects payload the way a partner does and returns the request.
func build(t testing.TB, from, to party, payload []byte, fileName string, opts mime.BuildOptions) request {
	t.Helper()
	built, err := mime.Build(payload, fileName, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := as2Header(from.id, to.id)
	for k, v := range built.Header {
		h[k] = v
	}
	return request{contentType: built.ContentType, header: h, body: built.Body}
}

// secureOpts signs with the partner's key and encrypts to the organization.
func secureOpts(from, to party) mime.BuildOptions {
	return mime.BuildOptions{
		Sign:    &mime.Signer{Certificate: from.cert, Key: from.key, Digest: cms.SHA256},
		Encrypt: &mime.Encryption{Recipients: []*x509.Certificate{to.cert}, EncryptOptions: cms.EncryptOptions{Cipher: cms.AES256CBC}},
	}
}

// envelop encrypts a MIME entity to cert and returns the request body and type.
func envelop(t testing.TB, entity []byte, cert *x509.Certificate) (string, []byte) {
	t.Helper()
	der, err := cms.Encrypt(entity, []*x509.Certificate{cert}, cms.EncryptOptions{Cipher: cms.AES256CBC})
	if err != nil {
		t.Fatal(err)
	}
	return `application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"`, der
}

// signedEntity writes a multipart/signed entity around content with signature sig.
func signedEntity(content, sig []byte) []byte {
	var b bytes.Buffer
	b.WriteString("Content-Type: multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256; boundary=\"b1\"\r\n\r\n")
	b.WriteString("--b1\r\n")
	b.Write(content)
	b.WriteString("\r\n--b1\r\nContent-Type: application/pkcs7-signature\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	b.WriteString(base64.StdEncoding.EncodeToString(sig))
	b.WriteString("\r\n--b1--\r\n")
	return b.Bytes()
}

func payloadEntity(payload []byte, fileName string) []byte {
	return append([]byte("Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: binary\r\n"+
		"Content-Disposition: attachment; filename=\""+fileName+"\"\r\n\r\n"), payload...)
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

type refusalTest struct {
	name string
	req  func(t testing.TB) request
	// raw, when set, sends the request itself and returns the answer.
	raw         func(t testing.TB, rc *Receiver, r request) reply
	status      int
	disposition string // the MDN's error description; "" for an HTTP refusal
	// unknown is set for a request refused before both AS2 ids named profiles: it is
	// counted among the unknown senders rather than kept as a refused message.
	unknown bool
	// reason is the refusal's reason code in the metrics; empty means the disposition,
	// else the code of the HTTP status.
	reason string
}

// wantReason is the reason code the metrics count tt under.
func (tt refusalTest) wantReason() string {
	switch {
	case tt.reason != "":
		return tt.reason
	case tt.disposition != "":
		return tt.disposition
	}
	return requestRefusal(tt.status)
}

// Bad requests and bad messages are refused with the right status or disposition. No
// document of them is stored: a request whose AS2 ids named profiles is kept as a
// refused message (its headers, body and MDN), any other is counted as an unknown
// sender.
func TestRefusals(t *testing.T) {
	org, partner, stranger := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "mallory")
	payload := bytes.Repeat([]byte("UNH+1+ORDERS:D:96A:UN'\r\n"), 200)
	valid := func(t testing.TB) request {
		return build(t, partner, org, payload, "orders.edi", secureOpts(partner, org))
	}
	withHeader := func(r request, k, v string) request {
		h := r.header.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		r.header = h
		return r
	}

	tests := []refusalTest{
		{name: "missing AS2-From", req: func(t testing.TB) request { return withHeader(valid(t), "AS2-From", "") }, status: 400, unknown: true},
		{name: "missing AS2-To", req: func(t testing.TB) request { return withHeader(valid(t), "AS2-To", "") }, status: 400, unknown: true},
		{name: "missing Message-ID", req: func(t testing.TB) request { return withHeader(valid(t), "Message-ID", "") }, status: 400, unknown: true},
		{name: "unknown AS2 ids", req: func(t testing.TB) request { return withHeader(valid(t), "AS2-From", "MALLORY") }, status: 403, unknown: true},
		{name: "unknown recipient", req: func(t testing.TB) request { return withHeader(valid(t), "AS2-To", `"SOMEONE ELSE"`) }, status: 403, unknown: true},
		{name: "sender is the receiver", req: func(t testing.TB) request { return withHeader(valid(t), "AS2-From", "WHARF") }, status: 400, unknown: true},
		{name: "unsupported AS2 version", req: func(t testing.TB) request { return withHeader(valid(t), "AS2-Version", "2.0") }, status: 400, unknown: true},
		{name: "async MDN URL on an unvouched host", req: func(t testing.TB) request {
			return withHeader(valid(t), "Receipt-Delivery-Option", "http://attacker.example/mdn")
		}, status: 400},
		{name: "async MDN URL that is not HTTP", req: func(t testing.TB) request {
			return withHeader(valid(t), "Receipt-Delivery-Option", "mailto:edi@acme.example")
		}, status: 400},
		{name: "declared length over the limit", req: func(t testing.TB) request {
			r := valid(t)
			r.body = make([]byte, 1<<20+1)
			return r
		}, status: 413},
		{name: "chunked body over the limit", req: func(t testing.TB) request {
			r := valid(t)
			r.body = make([]byte, 1<<20+1)
			return r
		}, raw: func(t testing.TB, rc *Receiver, r request) reply {
			return rawPost(t, rc.Addr().String(), rc.cfg.Path, fieldsOf(r), r.body, 64<<10)
		}, status: 413},
		{name: "connection closed mid-body", req: valid, raw: func(t testing.TB, rc *Receiver, r request) reply {
			conn, err := net.Dial("tcp", rc.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var b bytes.Buffer
			fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: x\r\n", rc.cfg.Path)
			for _, f := range fieldsOf(r) {
				fmt.Fprintf(&b, "%s: %s\r\n", f[0], f[1])
			}
			fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(r.body))
			b.Write(r.body[:len(r.body)/2])
			if _, err := conn.Write(b.Bytes()); err != nil {
				t.Fatal(err)
			}
			conn.(*net.TCPConn).CloseWrite()
			return readAnswer(t, conn)
		}, status: 400},
		{name: "truncated CMS", req: func(t testing.TB) request {
			r := valid(t)
			r.body = r.body[:len(r.body)/2]
			return r
		}, status: 200, disposition: "decryption-failed"},
		{name: "garbage body", req: func(t testing.TB) request {
			r := valid(t)
			r.body = randomBytes(t, 4000)
			return r
		}, status: 200, disposition: "decryption-failed"},
		{name: "unreadable MIME", req: func(t testing.TB) request {
			r := valid(t)
			r.contentType = "multipart/signed; protocol=\"application/pkcs7-signature\""
			return r
		}, status: 200, disposition: "unexpected-processing-error"},
		{name: "encrypted to another certificate", req: func(t testing.TB) request {
			return build(t, partner, org, payload, "orders.edi", secureOpts(partner, stranger))
		}, status: 200, disposition: "decryption-failed"},
		{name: "signed with another key", req: func(t testing.TB) request {
			opts := secureOpts(partner, org)
			opts.Sign = &mime.Signer{Certificate: stranger.cert, Key: stranger.key, Digest: cms.SHA256}
			return build(t, partner, org, payload, "orders.edi", opts)
		}, status: 200, disposition: "authentication-failed"},
		{name: "content changed after signing", req: func(t testing.TB) request {
			content := payloadEntity(payload, "orders.edi")
			sig, err := cms.SignDetached(content, partner.cert, partner.key, nil, cms.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			tampered := bytes.Replace(content, []byte("ORDERS"), []byte("INVOIC"), 1)
			r := request{header: as2Header(partner.id, org.id)}
			r.contentType, r.body = envelop(t, signedEntity(tampered, sig), org.cert)
			return r
		}, status: 200, disposition: "integrity-check-failed"},
		{name: "algorithm protection names another digest", req: func(t testing.TB) request {
			content := payloadEntity(payload, "orders.edi")
			r := request{header: as2Header(partner.id, org.id)}
			r.contentType, r.body = envelop(t, signedEntity(content, signWithWrongProtection(t, content, partner)), org.cert)
			return r
		}, status: 200, disposition: "integrity-check-failed"},
		{name: "tampered signature", req: func(t testing.TB) request {
			content := payloadEntity(payload, "orders.edi")
			sig, err := cms.SignDetached(content, partner.cert, partner.key, nil, cms.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			sig[len(sig)-1] ^= 0x01 // the end of the signature value
			r := request{header: as2Header(partner.id, org.id)}
			r.contentType, r.body = envelop(t, signedEntity(content, sig), org.cert)
			return r
		}, status: 200, disposition: "authentication-failed"},
		{name: "decompression bomb", req: func(t testing.TB) request {
			opts := secureOpts(partner, org)
			opts.Compress = true
			return build(t, partner, org, make([]byte, 8<<20), "bomb.bin", opts)
		}, status: 200, disposition: "decompression-failed"},
		{name: "unsigned under the secure defaults", req: func(t testing.TB) request {
			opts := secureOpts(partner, org)
			opts.Sign = nil
			return build(t, partner, org, payload, "orders.edi", opts)
		}, status: 200, disposition: "insufficient-message-security"},
		{name: "unencrypted under the secure defaults", req: func(t testing.TB) request {
			opts := secureOpts(partner, org)
			opts.Encrypt = nil
			return build(t, partner, org, payload, "orders.edi", opts)
		}, status: 200, disposition: "insufficient-message-security"},
		{name: "SHA-1 under the secure defaults", req: func(t testing.TB) request {
			opts := secureOpts(partner, org)
			opts.Sign.Digest = cms.SHA1
			return build(t, partner, org, payload, "orders.edi", opts)
		}, status: 200, disposition: "insufficient-message-security"},
		{name: "refusal without an MDN request", req: func(t testing.TB) request {
			r := withHeader(valid(t), "Disposition-Notification-To", "")
			r.body = randomBytes(t, 500)
			return r
		}, status: 400, reason: "decryption-failed"},
	}

	for _, mode := range bodyModes {
		t.Run(mode.name, func(t *testing.T) { testRefusals(t, org, partner, stranger, mode.tune, tests) })
	}
}

func testRefusals(t *testing.T, org, partner, stranger party, tune func(*Receiver), tests []refusalTest) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner, stranger})
		dir := newDirectory()
		dir.add(inbound(org, partner, func(r *profile.Remote) { r.MaxMessageSizeMiB = 1 }))
		metrics := &countingMetrics{}
		rc := b.start("as2_in", dir, func(_ *Config, d *Deps) { d.Metrics = metrics }, tune)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := tt.req(t)
				var a reply
				if tt.raw != nil {
					a = tt.raw(t, rc, r)
				} else {
					a = post(t, rc.url(), r.contentType, r.header, r.body)
				}
				if a.status != tt.status {
					t.Fatalf("HTTP %d, want %d: %s", a.status, tt.status, a.body)
				}
				if got := metrics.last(); got != "as2 as2_in "+tt.wantReason() {
					t.Errorf("metrics counted the refusal as %q, want %q", got, "as2 as2_in "+tt.wantReason())
				}
				if tt.disposition != "" {
					m := parseMDN(t, a, org.cert)
					want := "automatic-action/MDN-sent-automatically; processed/error: " + tt.disposition
					if got := m.Disposition.String(); got != want {
						t.Errorf("disposition %q, want %q", got, want)
					}
					if !m.Signed || m.OriginalMessageID != r.header.Get("Message-ID") || m.ReceivedContentMIC != nil {
						t.Errorf("MDN signed %v, Original-Message-ID %q, MIC %q", m.Signed, m.OriginalMessageID, m.RawMIC)
					}
				} else if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || len(a.body) < 10 {
					t.Errorf("answer %q: %q", ct, a.body)
				}
				if id := r.header.Get("Message-ID"); id != "" && len(b.logs.lines("as2_message_id", id)) != 1 {
					t.Errorf("%d log lines name the message, want 1", len(b.logs.lines("as2_message_id", id)))
				}
				if !tt.unknown {
					m := b.refused(r.header.Get("Message-ID"))
					if head := b.payload(m.ID, persistence.PayloadHeaders); !bytes.Contains(head, []byte("As2-From: ACME")) {
						t.Errorf("headers stage:\n%s", head)
					}
					if tt.disposition != "" && !bytes.Contains(b.payload(m.ID, persistence.PayloadReceipt), []byte(tt.disposition)) {
						t.Errorf("the receipt stage does not hold the MDN answered")
					}
				}
			})
		}
		var kept, unknown int64
		for _, tt := range tests {
			if tt.unknown {
				unknown++
			} else {
				kept++
			}
		}
		refused, total, err := s.ListMessages(b.ctx, persistence.MessageFilter{Status: persistence.StatusRefused})
		if err != nil || int64(total) != kept || b.messageCount() != 0 {
			t.Errorf("%d refused messages and %d others (%v), want %d and none", total, b.messageCount(), err, kept)
		}
		for _, m := range refused {
			if m.Size != 0 || m.SHA256 != "" {
				t.Errorf("message %d keeps a document: %+v", m.ID, m)
			}
		}
		// The counts are written a moment after the answers.
		var counted int64
		eventually(t, "unknown senders counted", func() bool {
			senders, _, err := s.ListUnknownSenders(b.ctx, persistence.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			counted = 0
			for _, u := range senders {
				counted += u.Count
			}
			return counted >= unknown
		})
		if counted != unknown {
			t.Errorf("unknown senders counted %d requests, want %d", counted, unknown)
		}
		var rows int
		if err := s.ModuleSQL().Read(b.ctx, func(tx module.Tx) error {
			return tx.QueryRow(b.ctx, `SELECT COUNT(*) FROM as2_inbound`).Scan(&rows)
		}); err != nil || rows != 0 {
			t.Errorf("%d as2_inbound rows (%v)", rows, err)
		}
	})
}

// fieldsOf lists a request's header fields for rawPost.
func fieldsOf(r request) [][2]string {
	out := [][2]string{{"Content-Type", r.contentType}}
	for k, vs := range r.header {
		for _, v := range vs {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}
