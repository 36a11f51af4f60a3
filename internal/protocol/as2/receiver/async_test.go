package receiver

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/persistence"
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
		alerts := &alerttest.Recorder{}
		rc := b.start("as2_in", dir, func(_ *Config, d *Deps) { d.Alerts = alerts }, func(rc *Receiver) {
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
			// Giving up raises mdn_undeliverable about the message and notes it in the
			// message's history, right after the job is recorded failed.
			var raised []alert.Alert
			eventually(t, "the mdn_undeliverable alert", func() bool {
				raised = raised[:0]
				for _, a := range alerts.Alerts() {
					if a.Code == alert.MDNUndeliverable {
						raised = append(raised, a)
					}
				}
				return len(raised) > 0
			})
			if len(raised) != 1 || raised[0].Subject.Kind != "message" || raised[0].Subject.ID != strconv.FormatInt(msg.ID, 10) ||
				raised[0].Link != "/ui/messages/"+strconv.FormatInt(msg.ID, 10) {
				t.Fatalf("alerts raised: %+v, want one mdn_undeliverable for message %d", raised, msg.ID)
			}
			for _, d := range raised[0].Details {
				if strings.Contains(d.Value, listener.url("")) {
					t.Errorf("alert detail %s carries the partner's URL: %q", d.Label, d.Value)
				}
			}
			var lines []persistence.HistoryEntry
			eventually(t, "the mdn_undeliverable history line", func() bool {
				hist, err := b.store.ListHistory(context.Background(), msg.ID)
				if err != nil {
					t.Fatal(err)
				}
				lines = lines[:0]
				for _, h := range hist {
					if h.Kind == persistence.HistoryMDNUndeliverable {
						lines = append(lines, h)
					}
				}
				return len(lines) > 0
			})
			if len(lines) != 1 || !strings.Contains(lines[0].Reason, "3 attempts") {
				t.Errorf("mdn_undeliverable history lines %+v, want one that says how often we tried", lines)
			}
			// The partner sends the message again and takes the stored MDN this time:
			// the alert resolves.
			listener.mu.Lock()
			listener.fail["/down"] = 0
			listener.mu.Unlock()
			if a := post(t, rc.url(), r.contentType, r.header, r.body); a.status != http.StatusOK {
				t.Fatalf("resend: HTTP %d: %s", a.status, a.body)
			}
			listener.wait(t, "/down", 1)
			eventually(t, "the alert's resolution", func() bool {
				for _, a := range alerts.Alerts() {
					if a.Code == alert.MDNUndeliverable && a.Resolves && a.Subject.Kind == "message" && a.Subject.ID == raised[0].Subject.ID {
						return true
					}
				}
				return false
			})
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
