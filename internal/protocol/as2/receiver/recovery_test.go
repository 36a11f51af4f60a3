package receiver

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// reserveRow leaves the row an interrupted request would have left for r: reserved,
// nothing stored.
func reserveRow(t *testing.T, b *bench, rc *Receiver, in profile.Inbound, r request) inboundRow {
	t.Helper()
	row := unpackedRow(t, rc, in, r)
	outcome, _, err := reserve(b.ctx, rc.rows, &row, duplicateFilenameCheck{}, duplicateContentCheck{})
	if err != nil || outcome != reserved {
		t.Fatalf("reserve: %v, %v", outcome, err)
	}
	return row
}

// unpackedRow is the as2_inbound row rc describes r with, unpacked with in's keys.
func unpackedRow(t *testing.T, rc *Receiver, in profile.Inbound, r request) inboundRow {
	t.Helper()
	h := r.header.Clone()
	h.Set("Content-Type", r.contentType)
	env, err := readEnvelope(h, int64(len(r.body)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := mime.Unpack(r.contentType, h, r.body, mime.UnpackOptions{Decryption: in.Decryption, PartnerCertificates: in.PartnerCertificates})
	if err != nil {
		t.Fatal(err)
	}
	return rc.newRow(&exchange{env: env, in: in, res: res})
}

// ingestAs stores the document of r, with the extra stages given, as the receiver would
// have before a crash.
func ingestAs(t *testing.T, b *bench, source string, org, partner party, r request, payload []byte, extra ...module.ExtraPayload) persistence.Message {
	t.Helper()
	res, err := b.disp.Ingest(b.ctx, []module.Incoming{{
		Source: persistence.InstanceName(source), From: partner.name, To: org.name, FileName: "doc.txt",
		Body: bytes.NewReader(payload), OriginEventID: r.header.Get("Message-ID"), CorrelationID: r.header.Get("Message-ID"),
		Extra: extra,
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ingest: %v %v", err, res)
	}
	return res[0].Message
}

// A crash between reserving a message and answering its MDN leaves a row the next copy
// of the message, or the background loop, finishes: the message is stored exactly once
// and its MDN written.
func TestInterruptedMessages(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		in := inbound(org, partner, nil)
		dir.add(in)
		idle := func(rc *Receiver) { rc.tick = time.Hour }
		stale := b.start("as2_in", dir, nil, idle, func(rc *Receiver) { rc.staleAfter = 0 })
		busy := b.start("as2_other", dir, nil, idle)
		listener := newMDNListener(t)
		n := 0
		doc := func() (request, []byte) {
			n++
			payload := []byte(fmt.Sprintf("document %d\r\n", n))
			return build(t, partner, org, payload, fmt.Sprintf("doc-%d.txt", n), secureOpts(partner, org)), payload
		}

		t.Run("crashed before storing", func(t *testing.T) {
			r, payload := doc()
			reserveRow(t, b, stale, in, r)
			before := b.messageCount()
			m := parseMDN(t, post(t, stale.url(), r.contentType, r.header, r.body), org.cert)
			if !m.Disposition.Successful() || m.ReceivedContentMIC == nil {
				t.Fatalf("MDN %s, MIC %q", m.Disposition, m.RawMIC)
			}
			if b.messageCount() != before+1 {
				t.Fatalf("%d messages, want %d", b.messageCount(), before+1)
			}
			msg := b.message("as2_in", r.header.Get("Message-ID"))
			if !bytes.Equal(b.payload(msg.ID, persistence.PayloadUnpacked), payload) {
				t.Error("payload differs")
			}
			if rec, err := FindInbound(b.ctx, b.sql, msg.ID); err != nil || rec.MDNStatus != "sent" {
				t.Errorf("record %+v, %v", rec, err)
			}
		})

		t.Run("crashed after storing", func(t *testing.T) {
			r, payload := doc()
			reserveRow(t, b, stale, in, r)
			msg := ingestAs(t, b, "as2_in", org, partner, r, payload)
			before := b.messageCount()
			m := parseMDN(t, post(t, stale.url(), r.contentType, r.header, r.body), org.cert)
			if !m.Disposition.Successful() || m.ReceivedContentMIC == nil {
				t.Fatalf("MDN %s, MIC %q", m.Disposition, m.RawMIC)
			}
			if b.messageCount() != before {
				t.Errorf("stored again: %d messages, want %d", b.messageCount(), before)
			}
			if _, err := FindInbound(b.ctx, b.sql, msg.ID); err != nil {
				t.Errorf("the row does not name the stored message: %v", err)
			}
		})

		// The MDN stored with the message is the one answered: the row and every copy
		// carry the same bytes.
		t.Run("crashed after storing with its MDN", func(t *testing.T) {
			for _, finish := range []string{"resend", "background"} {
				t.Run(finish, func(t *testing.T) {
					r, payload := doc()
					r.header.Set("Receipt-Delivery-Option", listener.url("/stored-"+finish))
					row := reserveRow(t, b, stale, in, r)
					mdn, err := stale.rowMDN(&row, in.Signer)
					if err != nil {
						t.Fatal(err)
					}
					msg := ingestAs(t, b, "as2_in", org, partner, r, payload,
						module.ExtraPayload{Stage: persistence.PayloadReceipt, Body: bytes.NewReader(receiptEntity(mdn))})
					before := b.messageCount()
					if finish == "resend" {
						r.header.Del("Receipt-Delivery-Option") // the resend asks for a synchronous MDN
						a := post(t, stale.url(), r.contentType, r.header, r.body)
						if a.status != http.StatusOK || !bytes.Equal(a.body, mdn.body) || a.header.Get("Message-ID") != mdn.messageID {
							t.Errorf("HTTP %d with MDN %s, want the stored MDN %s", a.status, a.header.Get("Message-ID"), mdn.messageID)
						}
					} else {
						stale.reconcile(b.ctx)
					}
					// The first attempt asked for an asynchronous MDN, queued now.
					if a := listener.wait(t, "/stored-"+finish, 1); !bytes.Equal(a.body, mdn.body) || a.header.Get("Message-ID") != mdn.messageID {
						t.Errorf("asynchronous MDN %s, want the stored MDN %s", a.header.Get("Message-ID"), mdn.messageID)
					}
					if b.messageCount() != before {
						t.Errorf("stored again: %d messages, want %d", b.messageCount(), before)
					}
					if state, id, body := b.inboundMDN(r.header.Get("Message-ID")); state != stateAnswered || id != mdn.messageID || !bytes.Equal(body, mdn.body) {
						t.Errorf("row %s records MDN %s, want the stored MDN %s", state, id, mdn.messageID)
					}
					if rec, err := FindInbound(b.ctx, b.sql, msg.ID); err != nil || rec.MDNMessageID != mdn.messageID {
						t.Errorf("record %+v, %v", rec, err)
					}
				})
			}
		})

		t.Run("still in progress", func(t *testing.T) {
			r, _ := doc()
			reserveRow(t, b, busy, in, r)
			before := b.messageCount()
			a := post(t, busy.url(), r.contentType, r.header, r.body)
			if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
				t.Errorf("HTTP %d (Retry-After %q): %s", a.status, a.header.Get("Retry-After"), a.body)
			}
			if b.messageCount() != before {
				t.Error("a message was stored")
			}
		})

		t.Run("background finishes a stored message", func(t *testing.T) {
			r, payload := doc()
			r.header.Set("Receipt-Delivery-Option", listener.url("/late"))
			reserveRow(t, b, stale, in, r)
			msg := ingestAs(t, b, "as2_in", org, partner, r, payload)
			stale.reconcile(b.ctx)
			m := parseMDN(t, listener.wait(t, "/late", 1), org.cert)
			if m.OriginalMessageID != r.header.Get("Message-ID") || !m.Disposition.Successful() {
				t.Errorf("MDN for %s: %s", m.OriginalMessageID, m.Disposition)
			}
			if receipt := b.payload(msg.ID, persistence.PayloadReceipt); !bytes.Contains(receipt, []byte("multipart/signed")) {
				t.Errorf("receipt stage:\n%.300s", receipt)
			}
			eventually(t, "the MDN recorded as sent", func() bool {
				rec, err := FindInbound(b.ctx, b.sql, msg.ID)
				return err == nil && rec.MDNStatus == "sent"
			})
		})

		t.Run("background forgets an unstored message", func(t *testing.T) {
			r, _ := doc()
			reserveRow(t, b, stale, in, r)
			stale.reconcile(b.ctx)
			if got := b.inboundRows(r.header.Get("Message-ID")); got != 0 {
				t.Errorf("%d rows left", got)
			}
			// The partner's resend is then taken afresh.
			if m := parseMDN(t, post(t, stale.url(), r.contentType, r.header, r.body), org.cert); !m.Disposition.Successful() {
				t.Errorf("resend: %s", m.Disposition)
			}
		})
	})
}
