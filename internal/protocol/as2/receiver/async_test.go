package receiver

import (
	"net/http"
	"testing"
	"time"

	"wharf/internal/persistence/db"
)

// Asynchronous MDNs are queued, retried with back-off while the partner fails, given up
// after the bounded attempts, and written for refusals too.
func TestAsyncMDN(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil, func(rc *Receiver) {
			rc.backoff = func(int) time.Duration { return 0 }
			rc.maxAttempts = 3
		})
		listener := newMDNListener(t)
		asyncTo := func(r request, path string) request {
			r.header = r.header.Clone()
			r.header.Set("Receipt-Delivery-Option", listener.url(path))
			return r
		}

		t.Run("retried until taken", func(t *testing.T) {
			listener.mu.Lock()
			listener.fail["/retry"] = 2
			listener.mu.Unlock()
			r := asyncTo(build(t, partner, org, []byte("retry me\r\n"), "r.txt", secureOpts(partner, org)), "/retry")
			if a := post(t, rc.url(), r.contentType, r.header, r.body); a.status != http.StatusOK {
				t.Fatalf("HTTP %d: %s", a.status, a.body)
			}
			posted := listener.wait(t, "/retry", 1)
			m := parseMDN(t, posted, org.cert)
			if !m.Disposition.Successful() || m.ReceivedContentMIC == nil || posted.header.Get("AS2-From") != string(org.id) {
				t.Errorf("MDN %s, MIC %q, AS2-From %q", m.Disposition, m.RawMIC, posted.header.Get("AS2-From"))
			}
			msg := b.message("as2_in", r.header.Get("Message-ID"))
			eventually(t, "the MDN recorded as sent", func() bool {
				rec, err := FindInbound(b.ctx, b.sql, msg.ID)
				return err == nil && rec.MDNStatus == "sent" && rec.MDNMode == "async" && rec.MDNURL == listener.url("/retry")
			})
		})

		t.Run("given up after the attempts", func(t *testing.T) {
			listener.mu.Lock()
			listener.fail["/down"] = 1000
			listener.mu.Unlock()
			r := asyncTo(build(t, partner, org, []byte("nobody listens\r\n"), "d.txt", secureOpts(partner, org)), "/down")
			if a := post(t, rc.url(), r.contentType, r.header, r.body); a.status != http.StatusOK {
				t.Fatalf("HTTP %d: %s", a.status, a.body)
			}
			msg := b.message("as2_in", r.header.Get("Message-ID"))
			eventually(t, "the MDN given up", func() bool {
				rec, err := FindInbound(b.ctx, b.sql, msg.ID)
				return err == nil && rec.MDNStatus == "failed"
			})
			listener.mu.Lock()
			left := listener.fail["/down"]
			listener.mu.Unlock()
			if tries := 1000 - left; tries != 3 {
				t.Errorf("%d attempts, want 3", tries)
			}
		})

		t.Run("refusal", func(t *testing.T) {
			r := asyncTo(build(t, partner, org, []byte("x\r\n"), "x.txt", secureOpts(partner, org)), "/refused")
			r.body = randomBytes(t, 3000)
			before := b.messageCount()
			if a := post(t, rc.url(), r.contentType, r.header, r.body); a.status != http.StatusOK {
				t.Fatalf("HTTP %d: %s", a.status, a.body)
			}
			m := parseMDN(t, listener.wait(t, "/refused", 1), org.cert)
			if got := m.Disposition.String(); got != dispositionPrefix+"processed/error: decryption-failed" {
				t.Errorf("disposition %s", got)
			}
			if b.messageCount() != before || b.inboundRows(r.header.Get("Message-ID")) != 0 {
				t.Error("the refused message was stored")
			}
		})
	})
}
