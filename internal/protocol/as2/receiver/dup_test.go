package receiver

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/profile"
)

const dispositionPrefix = "automatic-action/MDN-sent-automatically; "

// A signature seen before under another Message-ID is a replay: refused as
// duplicate-document, nothing stored.
func TestReplayedSignature(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil)

		r := build(t, partner, org, []byte("first document\r\n"), "a.txt", secureOpts(partner, org))
		if m := parseMDN(t, post(t, rc.url(), r.contentType, r.header, r.body), org.cert); m.Disposition.String() != dispositionPrefix+"processed" {
			t.Fatalf("first: %s", m.Disposition)
		}
		replayed := r.header.Clone()
		replayed.Set("Message-ID", "<replayed@attacker.example>")
		m := parseMDN(t, post(t, rc.url(), r.contentType, replayed, r.body), org.cert)
		if got := m.Disposition.String(); got != dispositionPrefix+"processed/error: duplicate-document" {
			t.Errorf("replay: %s", got)
		}
		if n := b.messageCount(); n != 1 {
			t.Errorf("%d messages, want 1", n)
		}
		if n := b.inboundRows("<replayed@attacker.example>"); n != 0 {
			t.Errorf("the replay left %d rows", n)
		}
	})
}

// A file name the partner sent before within the window is taken, taken with a
// warning, or refused, as its profile says.
func TestDuplicateFilename(t *testing.T) {
	org := testParty(t, "wharf")
	tests := []struct {
		policy      profile.DuplicateFilename
		disposition string // of the second message
		messages    int
	}{
		{profile.DuplicateAccept, "processed", 2},
		{profile.DuplicateWarn, "processed/warning: duplicate-filename", 2},
		{profile.DuplicateRefuse, "processed/error: duplicate-filename", 1},
	}
	forEachDB(t, func(t *testing.T, s *db.Store) {
		var partners []party
		for _, tt := range tests {
			partners = append(partners, testParty(t, "p-"+string(tt.policy)))
		}
		b := newBench(t, s, []party{org}, partners)
		dir := newDirectory()
		for i, tt := range tests {
			dir.add(inbound(org, partners[i], func(r *profile.Remote) { r.DuplicateFilename = tt.policy }))
		}
		rc := b.start("as2_in", dir, nil)
		for i, tt := range tests {
			t.Run(string(tt.policy), func(t *testing.T) {
				p := partners[i]
				before := b.messageCount()
				for n, want := range []string{"processed", tt.disposition} {
					r := build(t, p, org, []byte(fmt.Sprintf("document %d\r\n", n)), "invoice.edi", secureOpts(p, org))
					m := parseMDN(t, post(t, rc.url(), r.contentType, r.header, r.body), org.cert)
					if got := m.Disposition.String(); got != dispositionPrefix+want {
						t.Errorf("message %d: %s, want %s", n+1, got, want)
					}
					if (m.ReceivedContentMIC != nil) != m.Disposition.Successful() {
						t.Errorf("message %d: MIC %q with %s", n+1, m.RawMIC, m.Disposition)
					}
				}
				if got := b.messageCount() - before; got != tt.messages {
					t.Errorf("%d messages stored, want %d", got, tt.messages)
				}
			})
		}
		// A name generated from the Message-ID is never a repeat.
		p := partners[2]
		for i := range 2 {
			r := build(t, p, org, []byte(fmt.Sprintf("unnamed %d\r\n", i)), "", secureOpts(p, org))
			if m := parseMDN(t, post(t, rc.url(), r.contentType, r.header, r.body), org.cert); !m.Disposition.Successful() {
				t.Errorf("unnamed document: %s", m.Disposition)
			}
		}
	})
}

// A duplicate asking for an MDN the first copy did not ask for gets one built from what
// was recorded, and every later copy the same bytes.
func TestDuplicateAsksForMDN(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil)

		r := build(t, partner, org, []byte("no receipt asked\r\n"), "x.txt", secureOpts(partner, org))
		quiet := r.header.Clone()
		quiet.Del("Disposition-Notification-To")
		if a := post(t, rc.url(), r.contentType, quiet, r.body); a.status != http.StatusOK || a.header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("HTTP %d %q: %s", a.status, a.header.Get("Content-Type"), a.body)
		}
		first := post(t, rc.url(), r.contentType, r.header, r.body)
		m := parseMDN(t, first, org.cert)
		if !m.Signed || !m.Disposition.Successful() || m.ReceivedContentMIC == nil {
			t.Errorf("MDN for the duplicate: signed %v, %s, MIC %q", m.Signed, m.Disposition, m.RawMIC)
		}
		second := post(t, rc.url(), r.contentType, r.header, r.body)
		if !bytes.Equal(first.body, second.body) || first.header.Get("Content-Type") != second.header.Get("Content-Type") {
			t.Errorf("a later duplicate got another MDN")
		}
		if n := b.messageCount(); n != 1 {
			t.Errorf("%d messages, want 1", n)
		}
	})
}

// Other content under a Message-ID the partner used before is refused: the first copy's
// MDN would acknowledge a document that was never stored.
func TestMessageIDReused(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil)

		first := build(t, partner, org, []byte("the first document\r\n"), "a.txt", secureOpts(partner, org))
		first.header.Set("Authorization", "Basic c2VjcmV0OnNlY3JldA==")
		if m := parseMDN(t, post(t, rc.url(), first.contentType, first.header, first.body), org.cert); !m.Disposition.Successful() {
			t.Fatalf("first: %s", m.Disposition)
		}
		other := build(t, partner, org, []byte("another document\r\n"), "b.txt", secureOpts(partner, org))
		other.header.Set("Message-ID", first.header.Get("Message-ID"))
		m := parseMDN(t, post(t, rc.url(), other.contentType, other.header, other.body), org.cert)
		if got := m.Disposition.String(); got != dispositionPrefix+"processed/error: duplicate-document" {
			t.Errorf("reused Message-ID: %s", got)
		}
		if n := b.messageCount(); n != 1 {
			t.Errorf("%d messages, want 1", n)
		}
		msg := b.message("as2_in", first.header.Get("Message-ID"))
		if got := b.payload(msg.ID, persistence.PayloadUnpacked); string(got) != "the first document\r\n" {
			t.Errorf("stored %q", got)
		}
		if h := b.payload(msg.ID, persistence.PayloadHeaders); bytes.Contains(h, []byte("c2VjcmV0")) || !bytes.Contains(h, []byte("Authorization: [redacted]")) {
			t.Errorf("headers stage keeps the credentials:\n%s", h)
		}
	})
}
