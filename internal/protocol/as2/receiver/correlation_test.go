package receiver

import (
	"fmt"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// A partner's message is traced by its Message-ID (the origin event id) and by the value
// of the header its profile names as correlation_header, or the Message-ID without one;
// a value the store would refuse falls back on the Message-ID. A refused message is
// traced the same way.
func TestCorrelationHeader(t *testing.T) {
	org, partner, plain := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "beta")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner, plain})
		dir := newDirectory()
		dir.add(inbound(org, partner, func(r *profile.Remote) { r.CorrelationHeader = "X-Correlation-ID" }))
		dir.add(inbound(org, plain, nil))
		rc := b.start("as2_in", dir, nil)

		for i, tc := range []struct {
			name   string
			from   party
			header string // the X-Correlation-ID sent; "" sends none
			want   string // "" wants the Message-ID
		}{
			{"the named header", partner, "PO-4711", "PO-4711"},
			{"no header sent", partner, "", ""},
			{"a value too long", partner, strings.Repeat("x", persistence.MaxReferenceLen+1), ""},
			{"a profile naming no header", plain, "PO-4711", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := build(t, tc.from, org, []byte(fmt.Sprintf("document %d\r\n", i)), "a.edi", secureOpts(tc.from, org))
				if tc.header != "" {
					r.header.Set("X-Correlation-ID", tc.header)
				}
				if m := parseMDN(t, post(t, rc.url(), r.contentType, r.header, r.body), org.cert); !m.Disposition.Successful() {
					t.Fatalf("disposition %s", m.Disposition)
				}
				id := r.header.Get("Message-ID")
				msg := b.message("as2_in", id)
				want := tc.want
				if want == "" {
					want = id
				}
				if msg.OriginEventID != id || msg.CorrelationID != want {
					t.Fatalf("origin %q correlation %q, want %q and %q", msg.OriginEventID, msg.CorrelationID, id, want)
				}
			})
		}

		t.Run("a refused message", func(t *testing.T) {
			r := build(t, partner, org, []byte("unsigned\r\n"), "b.edi", mime.BuildOptions{})
			r.header.Set("X-Correlation-ID", "PO-4712")
			if m := parseMDN(t, post(t, rc.url(), r.contentType, r.header, r.body), org.cert); m.Disposition.Successful() {
				t.Fatalf("an unsigned message was taken: %s", m.Disposition)
			}
			msg := b.refused(r.header.Get("Message-ID"))
			if msg.CorrelationID != "PO-4712" {
				t.Fatalf("refused message's correlation id %q, want PO-4712", msg.CorrelationID)
			}
		})
	})
}
