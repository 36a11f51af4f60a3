package sender

import (
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/profile"
)

func TestContentTypeFor(t *testing.T) {
	byExt := map[string]string{
		"xml": "application/xml", "edi": "application/edifact", "x12": "application/edi-x12",
		"gz": "application/gzip", "tar.gz": "application/x-tar",
	}
	const fallback = "application/octet-stream"
	for _, tt := range []struct{ name, want string }{
		{"po.xml", "application/xml"},
		{"ORDERS 96A.EDI", "application/edifact"},
		{"850.x12", "application/edi-x12"},
		{"backup.tar.gz", "application/x-tar"},
		{"log.gz", "application/gzip"},
		{"notes.txt", fallback},
		{"xml", fallback},  // no extension, only a name that spells one
		{".xml", fallback}, // a dot file has no extension
		{"", fallback},
		{"po.xml.bak", fallback},
	} {
		if got := contentTypeFor(tt.name, byExt, fallback); got != tt.want {
			t.Errorf("contentTypeFor(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSendContentTypeByExtension sends two documents and reads the Content-Type the
// partner finds on the document's entity: the extension's type, else the default.
func TestSendContentTypeByExtension(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) { o.Remote.Compress = false })
		b.sender.cfg.ContentType = "application/octet-stream"
		b.sender.cfg.ContentTypes = map[string]string{"xml": "application/xml", "edi": "application/edifact"}
		p.setAnswer(p.answerMDN(positive))
		for i, tt := range []struct{ name, want string }{
			{"PO 1.XML", "application/xml"},
			{"notes.txt", "application/octet-stream"},
		} {
			b.ingest(t, tt.name, []byte("<po/>\r\n"))
			d, res := b.attempt(t, time.Now())
			if got := b.delivery(t, d.ID); got.State != persistence.DeliveryDelivered {
				t.Fatalf("%s: delivery %s (%v)", tt.name, got.State, res.Err)
			}
			rcv := p.requests()[i]
			head, _, _ := strings.Cut(string(rcv.micContent), "\r\n\r\n")
			if got := headerField(head, "Content-Type"); got != tt.want {
				t.Errorf("%s: the document travels as %q, want %q", tt.name, got, tt.want)
			}
		}
	})
}
