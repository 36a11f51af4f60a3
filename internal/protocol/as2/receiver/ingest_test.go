package receiver

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// observedIngester runs after on what every successful Ingest stored, before the
// receiver goes on.
type observedIngester struct {
	module.Ingester
	after func(stored persistence.Message)
}

func (o observedIngester) Ingest(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
	res, err := o.Ingester.Ingest(ctx, items)
	if err == nil {
		for _, r := range res {
			if r.Err == nil {
				o.after(r.Message)
			}
		}
	}
	return res, err
}

// inboundMDN reads what a message's as2_inbound row records of its MDN.
func (b *bench) inboundMDN(messageID string) (state, mdnMessageID string, body []byte) {
	b.t.Helper()
	err := b.sql.Read(b.ctx, func(tx module.Tx) error {
		return tx.QueryRow(b.ctx, `SELECT state, mdn_message_id, mdn_body FROM as2_inbound WHERE as2_message_id = ?`,
			messageID).Scan(&state, &mdnMessageID, &body)
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return state, mdnMessageID, body
}

// The MDN is stored with the message, by the one Ingest that stores it: the message has
// its receipt stage as soon as it exists, before the row records the MDN, and the
// receipt is the MDN answered, byte for byte.
func TestReceiptStoredWithMessage(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))

		var mu sync.Mutex
		type seen struct {
			receipt []byte
			err     error
			state   string
			rowMDN  []byte
		}
		atIngest := map[string]seen{} // by AS2 Message-ID
		ingest := observedIngester{Ingester: b.disp, after: func(msg persistence.Message) {
			var v seen
			if p, err := b.store.GetPayload(b.ctx, msg.ID, persistence.PayloadReceipt); err != nil {
				v.err = err
			} else if r, err := b.blobs.Open(b.ctx, p.Key); err != nil {
				v.err = err
			} else {
				v.receipt, v.err = io.ReadAll(r)
				r.Close()
			}
			// Read here, on the request's goroutine, before the receiver records the MDN.
			if err := b.sql.Read(b.ctx, func(tx module.Tx) error {
				return tx.QueryRow(b.ctx, `SELECT state, mdn_body FROM as2_inbound WHERE as2_message_id = ?`,
					msg.OriginEventID).Scan(&v.state, &v.rowMDN)
			}); err != nil && v.err == nil {
				v.err = err
			}
			mu.Lock()
			atIngest[msg.OriginEventID] = v
			mu.Unlock()
		}}
		rc := b.start("as2_in", dir, func(_ *Config, d *Deps) { d.Ingest = ingest })
		listener := newMDNListener(t)

		for _, mode := range []MDNMode{MDNSync, MDNAsync, MDNNone} {
			t.Run(string(mode), func(t *testing.T) {
				r := build(t, partner, org, []byte("receipt "+string(mode)+"\r\n"), "r-"+string(mode)+".txt", secureOpts(partner, org))
				switch mode {
				case MDNAsync:
					r.header.Set("Receipt-Delivery-Option", listener.url("/receipt"))
				case MDNNone:
					r.header.Del("Disposition-Notification-To")
				}
				id := r.header.Get("Message-ID")
				a := post(t, rc.url(), r.contentType, r.header, r.body)
				if a.status != http.StatusOK {
					t.Fatalf("HTTP %d: %s", a.status, a.body)
				}
				mu.Lock()
				v, ok := atIngest[id]
				mu.Unlock()
				if !ok {
					t.Fatal("the message was not stored through Ingest")
				}
				if v.state != stateReserved || v.rowMDN != nil {
					t.Errorf("at ingest the row is %s with an MDN of %d bytes, want reserved without one", v.state, len(v.rowMDN))
				}
				if mode == MDNNone {
					if !errors.Is(v.err, persistence.ErrNotFound) {
						t.Errorf("receipt stage without an MDN: %v, %d bytes", v.err, len(v.receipt))
					}
					return
				}
				if v.err != nil {
					t.Fatalf("no receipt stage once the message is stored: %v", v.err)
				}
				mdn := a
				if mode == MDNAsync {
					mdn = listener.wait(t, "/receipt", 1)
				}
				m := parseMDN(t, mdn, org.cert)
				if !m.Disposition.Successful() || m.ReceivedContentMIC == nil {
					t.Errorf("MDN %s, MIC %q", m.Disposition, m.RawMIC)
				}
				want := fmt.Sprintf("Content-Type: %s\r\nMessage-ID: %s\r\n\r\n%s",
					mdn.header.Get("Content-Type"), mdn.header.Get("Message-ID"), mdn.body)
				if string(v.receipt) != want {
					t.Errorf("receipt stage differs from the MDN sent:\n%.300s\nwant\n%.300s", v.receipt, want)
				}
				state, mdnID, body := b.inboundMDN(id)
				if state != stateAnswered || mdnID != mdn.header.Get("Message-ID") || !bytes.Equal(body, mdn.body) {
					t.Errorf("row %s records MDN %s (%d bytes), want answered with %s", state, mdnID, len(body), mdn.header.Get("Message-ID"))
				}
			})
		}
	})
}

// failingKey is a signing key whose every signature fails.
type failingKey struct{ crypto.Signer }

func (failingKey) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("the key store is unavailable")
}

// An MDN that cannot be written is answered as before it was written ahead: the message
// is stored without a receipt and answered 500, and the background loop writes the MDN
// once the key works again.
func TestMDNNotWritten(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		broken := inbound(org, partner, nil)
		broken.Signer = &mime.Signer{Certificate: org.cert, Key: failingKey{org.key}, Digest: cms.SHA256}
		dir.add(broken)
		rc := b.start("as2_in", dir, nil, func(rc *Receiver) { rc.tick, rc.staleAfter = time.Hour, 0 })

		listener := newMDNListener(t)
		r := build(t, partner, org, []byte("no MDN yet\r\n"), "late.txt", secureOpts(partner, org))
		r.header.Set("Receipt-Delivery-Option", listener.url("/late"))
		if a := post(t, rc.url(), r.contentType, r.header, r.body); a.status != http.StatusInternalServerError {
			t.Fatalf("HTTP %d, want 500: %s", a.status, a.body)
		}
		id := r.header.Get("Message-ID")
		msg := b.message("as2_in", id)
		if _, err := b.store.GetPayload(b.ctx, msg.ID, persistence.PayloadReceipt); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("receipt stage of a message without an MDN: %v", err)
		}
		if state, _, body := b.inboundMDN(id); state != stateReserved || body != nil {
			t.Errorf("row %s with an MDN of %d bytes, want reserved without one", state, len(body))
		}

		dir.add(inbound(org, partner, nil))
		rc.reconcile(b.ctx)
		m := parseMDN(t, listener.wait(t, "/late", 1), org.cert)
		if !m.Disposition.Successful() || m.ReceivedContentMIC == nil || !m.Signed {
			t.Errorf("MDN %s, MIC %q, signed %v", m.Disposition, m.RawMIC, m.Signed)
		}
		if receipt := b.payload(msg.ID, persistence.PayloadReceipt); !bytes.Contains(receipt, []byte("multipart/signed")) {
			t.Errorf("receipt stage:\n%.300s", receipt)
		}
		if state, _, _ := b.inboundMDN(id); state != stateAnswered {
			t.Errorf("row %s, want answered", state)
		}
	})
}

// largePayload is n bytes of EDI-like text: one block of lines repeated under
// numbered headers, so it compresses well and fast.
func largePayload(n int) []byte {
	var block bytes.Buffer
	for i := 0; block.Len() < 16<<10; i++ {
		fmt.Fprintf(&block, "LIN+%d++%08d:EN'QTY+21:%d'PRI+AAA:%d.%02d'\r\n", i, i*7919%100000000, i%97, i%1000, i%100)
	}
	var b bytes.Buffer
	b.Grow(n + block.Len() + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "UNH+%d+ORDERS:D:96A:UN'\r\n", i)
		b.Write(block.Bytes())
	}
	return b.Bytes()[:n]
}

// A message of 32 MiB goes through the receiver with its body in a file, opened as it
// is read, and a decompressed layer collected in a file: stored byte for byte, with the
// MIC over what was received, and nothing left in the temporary directory.
func TestLargeMessage(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	payload := largePayload(32 << 20)
	tests := []struct {
		name string
		opts func() mime.BuildOptions
	}{
		{"compressed, signed, AES-CBC", func() mime.BuildOptions {
			o := secureOpts(partner, org)
			o.Compress = true
			return o
		}},
		{"signed, AES-GCM", func() mime.BuildOptions {
			o := secureOpts(partner, org)
			o.Encrypt = &mime.Encryption{Recipients: []*x509.Certificate{org.cert}, EncryptOptions: cms.EncryptOptions{Cipher: cms.AES128GCM}}
			return o
		}},
	}
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, func(r *profile.Remote) { r.MaxMessageSizeMiB = 64 }))
		// Every body goes to a file, the compressed one too, however well it compressed.
		rc := b.start("as2_in", dir, nil, spoolAll)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				built, err := mime.Build(payload, "large.edi", tt.opts())
				if err != nil {
					t.Fatal(err)
				}
				r := request{contentType: built.ContentType, header: as2Header(partner.id, org.id), body: built.Body}
				for k, v := range built.Header {
					r.header[k] = v
				}
				m := parseMDN(t, post(t, rc.url(), r.contentType, r.header, r.body), org.cert)
				if !m.Disposition.Successful() || m.ReceivedContentMIC == nil {
					t.Fatalf("MDN %s, MIC %q", m.Disposition, m.RawMIC)
				}
				if !m.ReceivedContentMIC.Equal(built.MIC) {
					t.Errorf("MIC %s, want %s", m.ReceivedContentMIC, built.MIC)
				}
				msg := b.message("as2_in", r.header.Get("Message-ID"))
				if got := b.payload(msg.ID, persistence.PayloadUnpacked); !bytes.Equal(got, payload) {
					t.Errorf("unpacked stage of %d bytes differs from the %d bytes sent", len(got), len(payload))
				}
				if !bytes.Equal(b.payload(msg.ID, persistence.PayloadReceived), r.body) {
					t.Error("received stage differs from the request body")
				}
				if left, err := os.ReadDir(rc.tempDir); err != nil || len(left) > 0 {
					t.Errorf("temporary directory holds %d files (%v)", len(left), err)
				}
			})
		}
	})
}
