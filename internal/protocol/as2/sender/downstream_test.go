package sender

import (
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
)

func TestMDNDownstream(t *testing.T) {
	rec := OutboundRecord{MessageID: 7, DeliveryID: 9}
	withModifier := func(m string) *mime.ReceivedMDN {
		r := &mime.ReceivedMDN{}
		r.Disposition = mime.Processed()
		r.Disposition.Modifier = m
		return r
	}
	for _, c := range []struct {
		name       string
		v          verdict
		date       string
		status     string
		reason     string
		reportedAt time.Time
	}{
		{"accepted", verdict{Accepted: true, MDN: withModifier("")}, "Sun, 01 Mar 2026 12:00:00 GMT",
			persistence.DownstreamProcessed, "", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		{"accepted with a note, no date", verdict{Accepted: true, Note: "receipt without MIC", MDN: withModifier("")}, "",
			persistence.DownstreamProcessed, "receipt without MIC", time.Time{}},
		{"warning", verdict{Accepted: true, MDN: withModifier("warning: duplicate-document")}, "garbage",
			persistence.DownstreamProcessedWithWarning, "warning: duplicate-document", time.Time{}},
		{"refused", verdict{Reason: "negative MDN: processed/error: decryption-failed", MDN: withModifier("error: decryption-failed")}, "",
			persistence.DownstreamFailed, "negative MDN: processed/error: decryption-failed", time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := mdnDownstream(rec, c.v, c.date)
			if got.Status != c.status || got.Reason != c.reason || !got.ReportedAt.Equal(c.reportedAt) ||
				got.Reporter != persistence.DownstreamActorMDN || got.MessageID != 7 || got.DeliveryID != 9 {
				t.Fatalf("got %+v", got)
			}
		})
	}
}
