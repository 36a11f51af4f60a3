package sender

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// testPayload is binary, with CR, LF and NUL bytes that any line-ending rewrite would
// change.
func testPayload() []byte {
	b := bytes.Repeat([]byte("ISA*00*          *00*\r\nBEG*00*SA*PO-1~\n\x00\xff"), 300)
	for i := range 256 {
		b = append(b, byte(i))
	}
	return b
}

// harness is a peer and a gateway sending to it.
func harness(t *testing.T, s *db.Store, mutate func(*profile.Outbound)) (*bundle, *peer) {
	t.Helper()
	p := newPeer(t, as2test.NewIdentity(t, "wharf-org"), as2test.NewIdentity(t, "acme-partner"))
	return setup(t, s, p.url(), mutate), p
}

var messageIDRE = regexp.MustCompile(`^<wharf-\d+-\d+-[0-9a-f]{24}@127\.0\.0\.1>$`)

// TestSendInterop sends through the sender to a peer that opens each message with
// openssl, and answers with MDNs openssl signs: the peer must get the exact document, and
// the delivery must end as the receipt says.
func TestSendInterop(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*profile.Outbound)
		answer  func(p *peer) func(http.ResponseWriter, received)
		state   persistence.DeliveryState
		reason  string
		receipt bool // kept as the message's receipt stage
		// downstream is the status the MDN reports downstream ("": none, the MDN was not
		// authentic or there was none).
		downstream string
	}{
		{name: "defaults: compressed, sha256, aes256-cbc, signed sync MDN",
			answer: func(p *peer) func(http.ResponseWriter, received) { return p.answerMDN(positive) },
			state:  persistence.DeliveryDelivered, receipt: true, downstream: "processed"},
		{name: "sha512, aes256-gcm, oaep, MIC sha384",
			mutate: func(o *profile.Outbound) {
				o.Remote.Compress, o.Remote.SigningAlgorithm, o.Remote.EncryptionAlgorithm = false, profile.SignSHA512, profile.EncryptAES256GCM
				o.Remote.KeyTransport, o.Remote.MDNMICAlgorithm = profile.KeyTransportOAEP, profile.MICSHA384
			},
			answer: func(p *peer) func(http.ResponseWriter, received) { return p.answerMDN(positive) },
			state:  persistence.DeliveryDelivered, receipt: true, downstream: "processed"},
		{name: "compressed after signing",
			mutate: func(o *profile.Outbound) { o.Remote.CompressionOrder = profile.CompressAfterSigning },
			answer: func(p *peer) func(http.ResponseWriter, received) { return p.answerMDN(positive) },
			state:  persistence.DeliveryDelivered, receipt: true, downstream: "processed"},
		{name: "MDN tampered after signing",
			answer: func(p *peer) func(http.ResponseWriter, received) {
				return p.answerMDN(func(rcv received) mdnSpec {
					s := positive(rcv)
					s.Tamper = true
					return s
				})
			},
			state: persistence.DeliveryFailed, reason: "MDN signature does not verify"},
		{name: "negative disposition",
			answer: func(p *peer) func(http.ResponseWriter, received) {
				return p.answerMDN(func(received) mdnSpec {
					return mdnSpec{Disposition: processed + "/error: decryption-failed"}
				})
			},
			state: persistence.DeliveryFailed, reason: "negative MDN: automatic-action/MDN-sent-automatically; processed/error: decryption-failed", receipt: true,
			downstream: "failed"},
		{name: "wrong MIC",
			answer: func(p *peer) func(http.ResponseWriter, received) {
				return p.answerMDN(func(received) mdnSpec {
					return mdnSpec{Disposition: processed, MIC: "iIusKheYHhD9ugzJyYB0LpN9QhfgnlwdsWAiiKH/VTI=, sha-256"}
				})
			},
			state: persistence.DeliveryFailed, reason: "does not match the message sent", receipt: true, downstream: "failed"},
		{name: "503 is retried",
			answer: func(*peer) func(http.ResponseWriter, received) {
				return answerStatus(http.StatusServiceUnavailable, nil)
			},
			state: persistence.DeliveryRetrying, reason: "HTTP 503 Service Unavailable"},
		{name: "async MDN requested",
			mutate: func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNAsync },
			answer: func(*peer) func(http.ResponseWriter, received) { return answerStatus(http.StatusOK, nil) },
			state:  persistence.DeliveryAwaitingAck},
		{name: "no MDN requested",
			mutate: func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNNone },
			answer: func(*peer) func(http.ResponseWriter, received) { return answerStatus(http.StatusOK, nil) },
			state:  persistence.DeliveryDelivered},
	}
	mods := moduleSchemas(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbtest.ForEachModules(t, mods, func(t *testing.T, s *db.Store) {
				b, p := harness(t, s, tt.mutate)
				p.setAnswer(tt.answer(p))
				doc := testPayload()
				msg := b.ingest(t, "Bestellung 850.edi", doc)

				d, res := b.attempt(t, time.Now())
				t.Logf("result %s: %v", res.Kind, res.Err)
				got := b.delivery(t, d.ID)
				if got.State != tt.state {
					t.Fatalf("delivery %s (%s), want %s", got.State, got.LastError, tt.state)
				}
				if !strings.Contains(got.LastError, tt.reason) {
					t.Errorf("last error %q, want %q", got.LastError, tt.reason)
				}
				if ds := b.downstream(t, msg.ID); ds != tt.downstream {
					t.Errorf("downstream status %q, want %q", ds, tt.downstream)
				}

				reqs := p.requests()
				if len(reqs) != 1 {
					t.Fatalf("%d requests, want 1", len(reqs))
				}
				rcv := reqs[0]
				if rcv.compressedOutside != (tt.name == "compressed after signing") {
					t.Errorf("compressed layer outside the signature: %v", rcv.compressedOutside)
				}
				if !bytes.Equal(rcv.payload, doc) || rcv.fileName != "Bestellung 850.edi" {
					t.Errorf("peer got %d bytes named %q, want the %d bytes sent", len(rcv.payload), rcv.fileName, len(doc))
				}
				h := rcv.header
				for name, want := range map[string]string{
					"AS2-Version": "1.2", "AS2-From": `"WHARF ORG"`, "AS2-To": "ACME", "Mime-Version": "1.0",
					"Disposition-Notification-To": map[bool]string{true: "", false: "as2@wharf.test"}[tt.name == "no MDN requested"],
				} {
					if h.Get(name) != want {
						t.Errorf("%s: %q, want %q", name, h.Get(name), want)
					}
				}
				if id := h.Get("Message-Id"); !messageIDRE.MatchString(id) {
					t.Errorf("Message-ID %q", id)
				}
				if tt.name == "async MDN requested" && h.Get("Receipt-Delivery-Option") != "http://127.0.0.1:8081/as2/mdn?org=local" {
					t.Errorf("Receipt-Delivery-Option %q", h.Get("Receipt-Delivery-Option"))
				}

				recs := b.records(t, msg.ID)
				if len(recs) != 1 || recs[0].AS2MessageID != h.Get("Message-Id") || recs[0].Attempts != 1 {
					t.Fatalf("records %+v", recs)
				}
				rec := recs[0]
				if len(rec.ExpectedMICs) == 0 && tt.name != "no MDN requested" {
					t.Error("no expected MIC recorded")
				}
				if (rec.MDN != nil) != tt.receipt {
					t.Errorf("MDN recorded %+v, want %v", rec.MDN, tt.receipt)
				}
				if rec.MDN != nil {
					if rec.MDN.ReportingUA != "ACME test peer" || !rec.MDN.Signed || rec.MDN.Signer == "" ||
						rec.PartnerSoftware != "ACME test peer/1.0" || rec.MDN.Transport != profile.MDNSync {
						t.Errorf("MDN record %+v, software %q", rec.MDN, rec.PartnerSoftware)
					}
					if rec.MDN.MICMatched != (tt.state == persistence.DeliveryDelivered) {
						t.Errorf("MIC matched %v", rec.MDN.MICMatched)
					}
				}
				stored := b.receipt(t, msg.ID)
				if (stored != nil) != tt.receipt {
					t.Errorf("receipt stage stored: %v, want %v", stored != nil, tt.receipt)
				}
				if stored != nil && !bytes.HasPrefix(stored, []byte("MIME-Version: 1.0\r\nContent-Type: multipart/signed")) {
					t.Errorf("receipt stage starts %q", stored[:min(80, len(stored))])
				}

				if tt.state == persistence.DeliveryAwaitingAck {
					// The partner's async MDN settles the delivery.
					ct, body, err := p.signedMDN(rcv, positive(rcv))
					if err != nil {
						t.Fatal(err)
					}
					hdr := http.Header{"User-Agent": {"ACME async/2"}, "Message-Id": {"<async-mdn@acme>"}}
					if err := b.intake.AcceptMDN(context.Background(), ct, hdr, body); err != nil {
						t.Fatalf("AcceptMDN: %v", err)
					}
					if got := b.delivery(t, d.ID); got.State != persistence.DeliveryDelivered {
						t.Fatalf("after the async MDN: %s (%s)", got.State, got.LastError)
					}
					if ds := b.downstream(t, msg.ID); ds != "processed" {
						t.Errorf("downstream status after the async MDN %q, want processed", ds)
					}
					rec := b.records(t, msg.ID)[0]
					if rec.MDN == nil || rec.MDN.Verdict != VerdictAccepted || rec.MDN.Transport != profile.MDNAsync ||
						rec.PartnerSoftware != "ACME async/2" || rec.MDN.MessageID != "<async-mdn@acme>" || b.receipt(t, msg.ID) == nil {
						t.Errorf("after the async MDN: %+v", rec)
					}
				}
			})
		})
	}
}

// A retried delivery keeps its Message-ID; a redelivered one gets a new one; a lost
// outcome is reported again rather than sent twice.
func TestMessageIDAcrossAttempts(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, nil)
		msg := b.ingest(t, "po.edi", []byte("PO 1\r\n"))
		p.setAnswer(answerStatus(http.StatusServiceUnavailable, map[string]string{"Retry-After": "120"}))

		start := time.Now()
		d, res := b.attempt(t, start)
		if res.Kind != persistence.OutcomeRetry || res.At.Before(start.Add(119*time.Second)) || res.Class != delivery.ClassHTTP5xx {
			t.Fatalf("first attempt: %+v, want a retry after Retry-After", res)
		}
		p.setAnswer(p.answerMDN(positive))
		if _, res := b.attempt(t, res.At.Add(time.Second)); res.Kind != persistence.OutcomeDelivered {
			t.Fatalf("second attempt: %s %v", res.Kind, res.Err)
		}
		reqs := p.requests()
		if len(reqs) != 2 || reqs[0].header.Get("Message-Id") != reqs[1].header.Get("Message-Id") {
			t.Fatalf("Message-IDs of the retry: %d requests", len(reqs))
		}
		if recs := b.records(t, msg.ID); len(recs) != 1 || recs[0].Attempts != 2 || recs[0].Outcome != OutcomeDelivered {
			t.Fatalf("records after the retry: %+v", recs)
		}

		// The engine lost the outcome of an attempt (its lease ran out): the next attempt
		// reports delivered without sending.
		if _, err := s.Redeliver(context.Background(), d.ID, persistence.ResendNew, "tester"); err != nil {
			t.Fatal(err)
		}
		c := b.claim(t, time.Now())
		if res := b.deliver(c); res.Kind != persistence.OutcomeDelivered {
			t.Fatalf("redelivered attempt: %s %v", res.Kind, res.Err)
		}
		if _, err := s.ExpireLeases(context.Background(), time.Now().Add(2*time.Minute), 10); err != nil {
			t.Fatal(err)
		}
		_, res = b.attempt(t, time.Now().Add(3*time.Minute))
		if res.Kind != persistence.OutcomeDelivered {
			t.Fatalf("attempt after a lost outcome: %s %v", res.Kind, res.Err)
		}
		reqs = p.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3: the lost outcome must not be sent again", len(reqs))
		}
		if reqs[2].header.Get("Message-Id") == reqs[0].header.Get("Message-Id") {
			t.Error("the redelivered message kept the old Message-ID")
		}
		recs := b.records(t, msg.ID)
		if len(recs) != 2 || recs[1].AS2MessageID != reqs[2].header.Get("Message-Id") || recs[1].Attempts != 1 {
			t.Fatalf("records after the redeliver: %+v", recs)
		}
		if !recs[0].ReceiptStored || recs[1].ReceiptStored {
			t.Error("the first receipt must stay the message's receipt")
		}
		if recs[1].MDN == nil || recs[1].MDN.Verdict != VerdictAccepted {
			t.Error("the second Message-ID's MDN was not recorded")
		}
	})
}

func TestPermanentAndExhausted(t *testing.T) {
	zero := 0
	tests := []struct {
		name   string
		mutate func(*profile.Outbound)
		answer func(http.ResponseWriter, received)
		reason string
	}{
		{"redirect", nil, answerStatus(http.StatusFound, map[string]string{"Location": "http://127.0.0.1:1/elsewhere"}), "redirect refused (HTTP 302)"},
		{"not found", nil, answerStatus(http.StatusNotFound, nil), "HTTP 404 Not Found — not retried (built-in rule http_4xx: never)"},
		{"too large, the limit named", nil, answerText(http.StatusRequestEntityTooLarge, "the message of 900 bytes is larger than the limit of 1 MiB\r\nsecond line"),
			"HTTP 413 Request Entity Too Large: the message of 900 bytes is larger than the limit of 1 MiB"},
		{"retries exhausted", func(o *profile.Outbound) { o.Remote.Retry.MaxRetries = &zero },
			answerStatus(http.StatusTooManyRequests, nil),
			"HTTP 429 Too Many Requests — retries exhausted after 1 attempts (partner profile's policy, default, fixed)"},
		{"rule for the class gives up", func(o *profile.Outbound) {
			o.Remote.Retry.Rules.HTTP5xx = &delivery.RetryRule{Never: true}
		}, answerStatus(http.StatusBadGateway, nil), "HTTP 502 Bad Gateway — not retried (partner profile's policy, rule http_5xx: never)"},
		{"no MDN in the answer", nil, answerStatus(http.StatusOK, nil), "MDN cannot be read: not a message disposition notification"},
		{"empty answer", nil, answerStatus(http.StatusNoContent, nil), "without the MDN requested; ask the partner"},
		{"3DES outbound", func(o *profile.Outbound) { o.Remote.EncryptionAlgorithm = profile.Encrypt3DES }, nil, "accepted inbound only"},
		{"no signing key", func(o *profile.Outbound) { o.Signer = nil }, nil, "has no signing certificate"},
	}
	mods := moduleSchemas(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbtest.ForEachModules(t, mods, func(t *testing.T, s *db.Store) {
				b, p := harness(t, s, tt.mutate)
				if tt.answer != nil {
					p.setAnswer(tt.answer)
				}
				b.ingest(t, "po.edi", []byte("PO 1\r\n"))
				d, res := b.attempt(t, time.Now())
				if res.Kind != persistence.OutcomeFailed || res.Err == nil || !strings.Contains(res.Err.Error(), tt.reason) {
					t.Fatalf("result %s %v, want failed with %q", res.Kind, res.Err, tt.reason)
				}
				if got := b.delivery(t, d.ID); got.State != persistence.DeliveryFailed {
					t.Errorf("delivery %s", got.State)
				}
				if tt.answer == nil && len(p.requests()) != 0 {
					t.Error("a message that cannot be built was sent")
				}
			})
		})
	}
}

// An async MDN that is not the partner's, or names no message of ours, settles nothing.
func TestAcceptMDNRefusals(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNAsync })
		msg := b.ingest(t, "po.edi", []byte("PO 1\r\n"))
		d, res := b.attempt(t, time.Now())
		if res.Kind != persistence.OutcomeAwaitingAck {
			t.Fatalf("result %s %v", res.Kind, res.Err)
		}
		rcv := p.requests()[0]
		ctx := context.Background()

		ct, body, err := p.signedMDN(rcv, mdnSpec{Disposition: processed, MIC: requestedMIC(rcv), Tamper: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.intake.AcceptMDN(ctx, ct, http.Header{}, body); !errors.Is(err, ErrInvalidMDN) || !errors.Is(err, cms.ErrIntegrity) {
			t.Errorf("tampered MDN: %v, want ErrInvalidMDN and cms.ErrIntegrity", err)
		}
		mic, err := mime.ParseMIC(requestedMIC(rcv))
		if err != nil {
			t.Fatal(err)
		}
		ct, body, err = mime.BuildMDN(mime.MDN{OriginalMessageID: rcv.header.Get("Message-Id"), Disposition: mime.Processed(),
			ReceivedContentMIC: &mic}, mime.MDNBuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.intake.AcceptMDN(ctx, ct, http.Header{}, body); !errors.Is(err, ErrInvalidMDN) || !errors.Is(err, cms.ErrAuthentication) {
			t.Errorf("unsigned MDN where a signed one was asked: %v, want ErrInvalidMDN and cms.ErrAuthentication", err)
		}
		other := rcv
		other.header = rcv.header.Clone()
		other.header.Set("Message-Id", "<unknown@wharf>")
		ct, body, err = p.signedMDN(other, positive(other))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.intake.AcceptMDN(ctx, ct, http.Header{}, body); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("MDN for an unknown message: %v, want ErrNotFound", err)
		}
		if err := b.intake.AcceptMDN(ctx, "text/plain", http.Header{}, []byte("hello")); !errors.Is(err, ErrInvalidMDN) || !errors.Is(err, mime.ErrNotMDN) {
			t.Errorf("not an MDN: %v, want ErrInvalidMDN and mime.ErrNotMDN", err)
		}
		if got := b.delivery(t, d.ID); got.State != persistence.DeliveryAwaitingAck {
			t.Errorf("delivery %s after refused MDNs", got.State)
		}
		if b.receipt(t, msg.ID) != nil || b.records(t, msg.ID)[0].MDN != nil {
			t.Error("a refused MDN was kept")
		}

		// A negative MDN fails the delivery; a later positive one changes nothing.
		ct, body, err = p.signedMDN(rcv, mdnSpec{Disposition: processed + "/error: unexpected-processing-error"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.intake.AcceptMDN(ctx, ct, http.Header{}, body); err != nil {
			t.Fatal(err)
		}
		ct, body, err = p.signedMDN(rcv, positive(rcv))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.intake.AcceptMDN(ctx, ct, http.Header{}, body); err != nil {
			t.Fatal(err)
		}
		got := b.delivery(t, d.ID)
		if got.State != persistence.DeliveryFailed || !strings.Contains(got.LastError, "unexpected-processing-error") {
			t.Errorf("delivery %s (%s)", got.State, got.LastError)
		}
		if rec := b.records(t, msg.ID)[0]; rec.MDN == nil || rec.MDN.Verdict != VerdictRefused {
			t.Errorf("record %+v", rec)
		}
	})
}

// The endpoint's TLS certificate is trusted as the profile's tls_trust says: a server
// with a certificate of our own test CA is reached through the profile's roots or a pin,
// and refused otherwise with the setting that refused it named.
func TestTLSTrust(t *testing.T) {
	ca := certstest.CA(t, "Partner TLS CA")
	other := certstest.CA(t, "Other CA")
	leaf := certstest.ServerLeaf(t, ca, "partner endpoint", certstest.ECKey(t), "127.0.0.1")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leaf.Cert.Raw, ca.Cert.Raw}, PrivateKey: leaf.Key}}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pin := sha256.Sum256(leaf.Cert.Raw)
	pool := func(c *x509.Certificate) *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(c)
		return p
	}
	tests := []struct {
		name   string
		trust  profile.TLSTrust
		roots  *x509.CertPool
		pin    string
		kind   persistence.OutcomeKind
		reason []string
	}{
		{"trusted root of the profile", profile.TLSTrustProfile, pool(ca.Cert), "", persistence.OutcomeDelivered, nil},
		{"pinned certificate", profile.TLSTrustPinned, nil, hex.EncodeToString(pin[:]), persistence.OutcomeDelivered, nil},
		{"wrong pin", profile.TLSTrustPinned, nil, strings.Repeat("ab", 32), persistence.OutcomeFailed,
			[]string{"does not match tls_pinned_sha256", hex.EncodeToString(pin[:]), "tls_trust is pinned"}},
		{"root of another CA", profile.TLSTrustProfile, pool(other.Cert), "", persistence.OutcomeFailed,
			[]string{"unknown authority", "tls_trust is profile"}},
		{"system roots only", profile.TLSTrustSystem, nil, "", persistence.OutcomeFailed,
			[]string{"unknown authority", "tls_trust is system", "tls_trust_certificate_ids"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
				b := setup(t, s, srv.URL+"/as2", func(o *profile.Outbound) {
					o.Remote.MDNMode = profile.MDNNone
					o.Remote.Retry.MaxRetries = new(int)
					o.Remote.TLSTrust, o.Remote.TLSPinnedSHA256, o.Roots = tt.trust, tt.pin, tt.roots
				})
				b.ingest(t, "po.edi", []byte("PO 1\r\n"))
				_, res := b.attempt(t, time.Now())
				if res.Kind != tt.kind {
					t.Fatalf("result %s %v, want %s", res.Kind, res.Err, tt.kind)
				}
				for _, want := range tt.reason {
					if res.Err == nil || !strings.Contains(res.Err.Error(), want) {
						t.Errorf("reason %v, want it to say %q", res.Err, want)
					}
				}
			})
		})
	}
}

// signals hands wake-ups to the engine in-process.
type signals struct {
	mu  sync.Mutex
	fns map[persistence.InstanceName][]func()
}

func (s *signals) Wake(ts []persistence.InstanceName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		for _, fn := range s.fns[t] {
			fn()
		}
	}
}

func (s *signals) OnWake(t persistence.InstanceName, fn func()) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fns == nil {
		s.fns = map[persistence.InstanceName][]func(){}
	}
	s.fns[t] = append(s.fns[t], fn)
	return func() {}, nil
}

// The delivery engine runs the sender like any target, its instance policy behind the
// partner's.
func TestEngineRunsSender(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, nil)
		p.setAnswer(p.answerMDN(positive))
		sig := &signals{}
		e := delivery.NewEngine(s, b.blobs, sig, testLogger(t), delivery.Config{PollInterval: 20 * time.Millisecond})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Stop(context.Background()) })
		if err := e.AddTarget(testTarget, b.sender, NewConfig().Options()); err != nil {
			t.Fatal(err)
		}
		msg := b.ingest(t, "po.edi", testPayload())
		deadline := time.Now().Add(20 * time.Second)
		for {
			ds, err := s.ListDeliveries(context.Background(), msg.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ds[0].State == persistence.DeliveryDelivered {
				break
			}
			if ds[0].State == persistence.DeliveryFailed || time.Now().After(deadline) {
				t.Fatalf("delivery %s (%s)", ds[0].State, ds[0].LastError)
			}
			time.Sleep(10 * time.Millisecond) // polling interval
		}
		if got, err := s.GetMessage(context.Background(), msg.ID); err != nil || got.Status != persistence.StatusDelivered {
			t.Errorf("message status %s, %v", got.Status, err)
		}
	})
}
