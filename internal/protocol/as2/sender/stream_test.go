package sender

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// A 64 MiB message is built while it is sent, chunked, or spooled and sent with its
// length when the partner's profile says chunked never. The peer opens it with openssl
// (decrypt, verify; the compressed layer inflated by package cms, as this openssl has
// no zlib) and our receiver's code opens it too, byte for byte; the peer's signed MDN
// matches the MIC the record holds.
func TestLargeMessageStreamedToPeer(t *testing.T) {
	payload := as2test.MixedPayload(64<<20 + 1)
	for _, chunked := range []profile.Chunking{profile.ChunkedAuto, profile.ChunkedNever} {
		t.Run(string(chunked), func(t *testing.T) {
			dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
				b, p := harness(t, s, func(o *profile.Outbound) { o.Remote.Chunked = chunked })
				p.setAnswer(p.answerMDN(positive))
				msg := b.ingest(t, "large.edi", payload)
				d, res := b.attempt(t, time.Now())
				if got := b.delivery(t, d.ID); got.State != persistence.DeliveryDelivered {
					t.Fatalf("delivery %s (%s); result %+v", got.State, got.LastError, res)
				}
				reqs := p.requests()
				if len(reqs) != 1 {
					t.Fatalf("peer got %d requests", len(reqs))
				}
				rcv := reqs[0]
				if !bytes.Equal(rcv.payload, payload) || rcv.fileName != "large.edi" {
					t.Fatalf("openssl opened %d bytes named %q, want the %d bytes of large.edi", len(rcv.payload), rcv.fileName, len(payload))
				}
				if chunked == profile.ChunkedNever {
					if rcv.contentLength != int64(len(rcv.body)) || len(rcv.transferEncoding) != 0 {
						t.Errorf("Content-Length %d for %d bytes, Transfer-Encoding %v; want the length and no chunking",
							rcv.contentLength, len(rcv.body), rcv.transferEncoding)
					}
				} else if !slices.Equal(rcv.transferEncoding, []string{"chunked"}) || rcv.contentLength != -1 {
					t.Errorf("Content-Length %d, Transfer-Encoding %v; want chunked", rcv.contentLength, rcv.transferEncoding)
				}
				rec := b.records(t, msg.ID)[0]
				if rec.MDN == nil || !rec.MDN.MICMatched || len(rec.ExpectedMICs) == 0 {
					t.Fatalf("record %+v", rec)
				}

				var got bytes.Buffer
				res2, err := mime.UnpackStream(rcv.header.Get("Content-Type"), rcv.header, bytes.NewReader(rcv.body), &got, mime.UnpackOptions{
					Decryption:          []cms.Recipient{{Certificate: b.partner.Cert, Key: b.partner.Key.(crypto.Decrypter)}},
					PartnerCertificates: []*x509.Certificate{b.ours.Cert},
					MaxDecompressedSize: 128 << 20,
					TempDir:             t.TempDir(),
				})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), payload) || !slices.Contains(rec.ExpectedMICs, res2.MIC.String()) {
					t.Errorf("our receiver: %d bytes, MIC %s, the record expects %v", got.Len(), res2.MIC, rec.ExpectedMICs)
				}
				spooled, _ := filepath.Glob(filepath.Join(b.sender.tempDir, "as2-send-*"))
				if len(spooled) != 0 {
					t.Errorf("spool files left: %v", spooled)
				}
			})
		})
	}
}

// Streamed messages of the other protections open with openssl too, and their MICs
// match the peer's receipt (the peer opens encrypted messages only; mime's round trip
// covers the others).
func TestStreamedProtectionsToPeer(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*profile.Outbound)
	}{
		{"compressed after signing", func(o *profile.Outbound) { o.Remote.CompressionOrder = profile.CompressAfterSigning }},
		{"compressed, encrypted, unsigned", func(o *profile.Outbound) { o.Remote.SigningAlgorithm = profile.SignNone }},
		{"encrypted only, aes128, oaep", func(o *profile.Outbound) {
			o.Remote.Compress, o.Remote.SigningAlgorithm = false, profile.SignNone
			o.Remote.EncryptionAlgorithm, o.Remote.KeyTransport = profile.EncryptAES128CBC, profile.KeyTransportOAEP
		}},
	}
	payload := as2test.MixedPayload(streamThreshold + 3)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
				b, p := harness(t, s, tt.mutate)
				p.setAnswer(p.answerMDN(positive))
				msg := b.ingest(t, "order.edi", payload)
				d, _ := b.attempt(t, time.Now())
				if got := b.delivery(t, d.ID); got.State != persistence.DeliveryDelivered {
					t.Fatalf("delivery %s (%s)", got.State, got.LastError)
				}
				reqs := p.requests()
				if len(reqs) != 1 || !bytes.Equal(reqs[0].payload, payload) || !slices.Equal(reqs[0].transferEncoding, []string{"chunked"}) {
					t.Fatalf("peer got %d requests", len(reqs))
				}
				if rec := b.records(t, msg.ID)[0]; rec.MDN == nil || !rec.MDN.MICMatched {
					t.Errorf("record %+v", rec)
				}
			})
		})
	}
}

// An async MDN that the partner posts before it answers the POST, so before the sender
// records the answer, is judged against the MICs of the streamed message: they are
// recorded before the body's last byte leaves.
func TestStreamedAsyncMDNOvertakesAnswer(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNAsync })
		accepted := make(chan error, 1)
		p.setAnswer(func(w http.ResponseWriter, rcv received) {
			ct, body, err := p.signedMDN(rcv, positive(rcv))
			if err == nil {
				err = b.intake.AcceptMDN(context.Background(), ct, http.Header{"User-Agent": {"ACME async/2"}}, body)
			}
			accepted <- err
			w.WriteHeader(http.StatusOK)
		})
		msg := b.ingest(t, "order.edi", as2test.MixedPayload(streamThreshold+1))
		c := b.claim(t, time.Now())
		// The MDN settled the delivery before the attempt's result: the engine finds
		// its claim gone and leaves the delivery as the MDN settled it.
		b.deliver(c)
		d := c.Delivery
		if err := <-accepted; err != nil {
			t.Fatalf("AcceptMDN before the answer: %v", err)
		}
		rec := b.records(t, msg.ID)[0]
		if rec.MDN == nil || rec.MDN.Verdict != VerdictAccepted || !rec.MDN.MICMatched {
			t.Fatalf("record %+v, MDN %+v", rec, rec.MDN)
		}
		if got := b.delivery(t, d.ID); got.State != persistence.DeliveryDelivered {
			t.Errorf("delivery %s (%s), want delivered", got.State, got.LastError)
		}
	})
}

// A streamed message tried again is built again from the stored document: the same
// document under a fresh envelope.
func TestStreamedRetryBuildsAgain(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, nil)
		p.setAnswer(answerStatus(http.StatusServiceUnavailable, nil))
		payload := as2test.MixedPayload(streamThreshold + 100)
		msg := b.ingest(t, "order.edi", payload)
		b.attempt(t, time.Now())
		p.setAnswer(p.answerMDN(positive))
		d, _ := b.attempt(t, time.Now().Add(time.Hour))
		if got := b.delivery(t, d.ID); got.State != persistence.DeliveryDelivered {
			t.Fatalf("delivery %s (%s)", got.State, got.LastError)
		}
		reqs := p.requests()
		if len(reqs) != 2 || !bytes.Equal(reqs[0].payload, payload) || !bytes.Equal(reqs[1].payload, payload) {
			t.Fatalf("peer got %d requests", len(reqs))
		}
		if bytes.Equal(reqs[0].body, reqs[1].body) || reqs[0].header.Get("Message-Id") != reqs[1].header.Get("Message-Id") {
			t.Error("the retry sent the same envelope, or under another Message-ID")
		}
		if rec := b.records(t, msg.ID)[0]; rec.Attempts != 2 || rec.MDN == nil || !rec.MDN.MICMatched {
			t.Errorf("record %+v", rec)
		}
	})
}

// Sending a 64 MiB message, compressed, signed and encrypted, allocates a small
// fraction of its size: it is read, built and sent in chunks.
func TestStreamedSendMemoryBounded(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		srv, got := discardServer(t)
		b := setup(t, s, srv, func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNNone })
		const size = 64 << 20
		b.ingest(t, "large.bin", as2test.MixedPayload(size))
		c := b.claim(t, time.Now())

		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := b.deliver(c)
		runtime.ReadMemStats(&after)
		if res.Kind != persistence.OutcomeDelivered {
			t.Fatalf("result %+v", res)
		}
		// Half the document is random: the body is at least that long.
		if n := got(); n < size/2 {
			t.Fatalf("the server got %d bytes", n)
		}
		const budget = size / 8
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > budget {
			t.Errorf("sending %d bytes allocated %d bytes, budget %d", size, alloc, budget)
		} else {
			t.Logf("sending %d bytes allocated %d bytes", size, alloc)
		}
	})
}

// A GCM message above maxGCMMessage is refused before anything is built or sent, with
// an error naming the limit.
func TestGCMMessageAboveLimitRefused(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) {
			o.Remote.EncryptionAlgorithm, o.Remote.GCMConfirmed = profile.EncryptAES256GCM, true
		})
		b.ingest(t, "large.bin", make([]byte, maxGCMMessage+1))
		d, res := b.attempt(t, time.Now())
		if res.Kind != persistence.OutcomeFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "64 MiB") ||
			!strings.Contains(res.Err.Error(), "AES-GCM") {
			t.Fatalf("result %+v", res)
		}
		if got := b.delivery(t, d.ID); got.State != persistence.DeliveryFailed {
			t.Errorf("delivery %s", got.State)
		}
		if n := len(p.requests()); n != 0 {
			t.Errorf("peer got %d requests", n)
		}
	})
}

// A document larger than the partner's limit, found while it is streamed (the stored size
// said otherwise), fails the delivery for good instead of being retried as a transport
// failure.
func TestStreamedDocumentOverLimit(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		srv, _ := discardServer(t)
		b := setup(t, s, srv, func(o *profile.Outbound) { o.Remote.MaxMessageSizeMiB = 9 })
		b.ingest(t, "large.bin", as2test.MixedPayload(streamThreshold+1))
		c := b.claim(t, time.Now())
		grown := as2test.MixedPayload(10 << 20)
		c.Message.Size = streamThreshold + 1
		res := b.sender.Deliver(context.Background(), attemptWith(c, func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(grown)), nil
		}))
		if res.Kind != persistence.OutcomeFailed || !strings.Contains(res.Err.Error(), "limit of 9 MiB") {
			t.Fatalf("result %+v", res)
		}
	})
}

// discardServer reads and drops request bodies, answering 200; got tells how many bytes
// the last complete body had.
func discardServer(t *testing.T) (url string, got func() int64) {
	var mu sync.Mutex
	var last int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err == nil {
			mu.Lock()
			last = n
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// attemptWith is the claim's attempt with its document read through open.
func attemptWith(c persistence.Claim, open func(context.Context) (io.ReadCloser, error)) delivery.Attempt {
	return delivery.Attempt{Delivery: c.Delivery, Message: c.Message, Number: c.Delivery.Attempts, Open: open}
}

// A new sender removes the spool files an ended process left behind, and only those old
// enough that no running attempt can own them.
func TestStaleSpoolsRemoved(t *testing.T) {
	dir := t.TempDir()
	stale, fresh, other := filepath.Join(dir, "as2-send-1.body"), filepath.Join(dir, "as2-send-2.body"), filepath.Join(dir, "inbound-1.tmp")
	for _, f := range []string{stale, fresh, other} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleSpool)
	for _, f := range []string{stale, other} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleSpools(dir, time.Now(), testLogger(t))
	for f, want := range map[string]bool{stale: false, fresh: true, other: true} {
		if _, err := os.Stat(f); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(f), err == nil, want)
		}
	}
}

// A spool file gone before its request is sent is our fault, not the partner's: the
// request fails reading it, and the message keeps the cause for its result.
func TestMissingSpoolFileIsTheBuildsFault(t *testing.T) {
	m := &streamed{spoolPath: filepath.Join(t.TempDir(), "gone.body"), spoolSize: 3}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.setBody(context.Background(), req)()
	if _, err := io.ReadAll(req.Body); !errors.Is(err, errReadDoc) {
		t.Fatalf("reading the body: %v, want errReadDoc", err)
	}
	if _, fault := m.result(); !errors.Is(fault, errReadDoc) {
		t.Fatalf("fault %v, want errReadDoc", fault)
	}
}
