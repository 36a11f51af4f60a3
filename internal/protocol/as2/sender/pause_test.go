package sender

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// TestPauseFor holds the classification of refusing dispositions: those a partner
// repeats for every message pause it, those about one message do not.
func TestPauseFor(t *testing.T) {
	tests := []struct {
		disposition string
		pauses      bool
	}{
		{"automatic-action/MDN-sent-automatically; processed/error: authentication-failed", true},
		{"automatic-action/MDN-sent-automatically; processed/error: decryption-failed", true},
		{"automatic-action/MDN-sent-automatically; processed/error: insufficient-message-security", true},
		{"automatic-action/MDN-sent-automatically; failed/failure: unsupported MIC-algorithms", true},
		{"automatic-action/MDN-sent-automatically; processed/Error: Authentication-Failed", true},
		{"automatic-action/MDN-sent-automatically; failed/failure: unsupported-algorithm", true},
		{"automatic-action/MDN-sent-automatically; processed/error: integrity-check-failed", false},
		{"automatic-action/MDN-sent-automatically; processed/error: decompression-failed", false},
		{"automatic-action/MDN-sent-automatically; processed/error: duplicate-document", false},
		{"automatic-action/MDN-sent-automatically; processed/error: unexpected-processing-error", false},
		{"automatic-action/MDN-sent-automatically; processed", false},
		{"automatic-action/MDN-sent-automatically; processed/warning: authentication-failed", false},
		{"automatic-action/MDN-sent-automatically; failed/failure: sender-equals-receiver", false},
	}
	for _, tt := range tests {
		t.Run(tt.disposition, func(t *testing.T) {
			d, err := mime.ParseDisposition(tt.disposition)
			if err != nil {
				t.Fatal(err)
			}
			got := pauseFor(d)
			if (got != "") != tt.pauses {
				t.Fatalf("pauseFor = %q, want pausing %v", got, tt.pauses)
			}
			if tt.pauses && !strings.Contains(got, "resume") {
				t.Fatalf("reason %q does not say what to do", got)
			}
		})
	}
}

// TestAsyncRefusalPausesPartner: an asynchronous MDN saying authentication-failed fails
// the delivery and pauses the partner in the settlement; the message waiting behind it is
// paused, not sent. A negative MDN about the message alone (TestAcceptMDNRefusals) pauses
// nothing.
func TestAsyncRefusalPausesPartner(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNAsync })
		b.ingest(t, "po-1.edi", []byte("PO 1\r\n"))
		d, res := b.attempt(t, time.Now())
		if res.Kind != persistence.OutcomeAwaitingAck {
			t.Fatalf("result %s %v", res.Kind, res.Err)
		}
		waiting := b.ingest(t, "po-2.edi", []byte("PO 2\r\n"))
		rcv := p.requests()[0]
		ct, body, err := p.signedMDN(rcv, mdnSpec{Disposition: processed + "/error: authentication-failed"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.intake.AcceptMDN(context.Background(), ct, http.Header{}, body); err != nil {
			t.Fatal(err)
		}
		if got := b.delivery(t, d.ID); got.State != persistence.DeliveryFailed {
			t.Fatalf("refused delivery %s", got.State)
		}
		pause, err := s.GetPartnerPause(context.Background(), "acme")
		if err != nil || pause.DeliveryID != d.ID || !strings.Contains(pause.Reason, "authentication-failed") {
			t.Fatalf("pause %+v, %v", pause, err)
		}
		ds, err := s.ListDeliveries(context.Background(), waiting.ID)
		if err != nil || len(ds) != 1 || ds[0].State != persistence.DeliveryPaused {
			t.Fatalf("waiting message's deliveries %+v, %v", ds, err)
		}
	})
}
