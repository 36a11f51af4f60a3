package receiver

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"wharf/internal/persistence/db"
)

func TestHeaderMetadata(t *testing.T) {
	many := http.Header{}
	for i := range 40 {
		many.Set(fmt.Sprintf("X-H%02d", i), "v")
	}
	for _, tc := range []struct {
		name string
		h    http.Header
		want map[string]string
	}{
		{"subject and x headers", http.Header{"Subject": {"Order 17"}, "X-Order-Id": {"17"}, "Content-Type": {"application/edi"}, "As2-From": {"acme"}},
			map[string]string{"subject": "Order 17", "x-order-id": "17"}},
		{"bad names and values dropped", http.Header{"X-Bad.name": {"x"}, "X-Long": {strings.Repeat("x", 257)}, "X-Ctl": {"a\x01b"}, "X-Ok": {"fine"}, "X-Empty": {""}},
			map[string]string{"x-ok": "fine"}},
		{"credentials never kept", http.Header{"X-Api-Key": {"s3cret"}, "X-Auth-Token": {"s3cret"}, "X-Signature": {"abc"}, "X-Order": {"1"}},
			map[string]string{"x-order": "1"}},
		{"first value of a repeated header", http.Header{"X-Seq": {"1", "2"}}, map[string]string{"x-seq": "1"}},
		{"nothing", http.Header{"Content-Type": {"a/b"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := headerMetadata(tc.h); !maps.Equal(got, tc.want) {
				t.Fatalf("metadata = %v, want %v", got, tc.want)
			}
		})
	}
	if got := headerMetadata(many); len(got) != 32 || got["x-h00"] != "v" || got["x-h31"] != "v" || got["x-h32"] != "" {
		t.Fatalf("40 headers kept as %d: %v", len(got), got)
	}
}

// A received message keeps its Subject and X- headers as metadata.
func TestReceivedMetadata(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil)
		r := build(t, partner, org, []byte("order\r\n"), "o.edi", secureOpts(partner, org))
		r.header.Set("Subject", "Order 17")
		r.header.Set("X-Order-Id", "17")
		r.header.Set("X-Api-Key", "s3cret")
		if a := post(t, rc.url(), r.contentType, r.header, r.body); a.status != http.StatusOK {
			t.Fatalf("status %d", a.status)
		}
		m := b.message("as2_in", r.header.Get("Message-ID"))
		if want := map[string]string{"subject": "Order 17", "x-order-id": "17"}; !maps.Equal(m.Metadata, want) {
			t.Fatalf("metadata = %v, want %v", m.Metadata, want)
		}
	})
}
