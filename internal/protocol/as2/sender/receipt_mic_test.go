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
	"wharf/internal/protocol/as2/profile"
)

// A signed positive MDN without a Received-Content-MIC (what pyas2-lib answers for an
// unsigned message, corpus case pb-10) settles a message we did not sign as delivered,
// noted in the history and the MDN record, over either transport; for a signed message
// it stays a failure that says what to do.
func TestReceiptWithoutMIC(t *testing.T) {
	noMIC := func(received) mdnSpec { return mdnSpec{Disposition: processed} }
	tests := []struct {
		name   string
		signed bool
		mode   profile.MDNMode
		state  persistence.DeliveryState
		text   string // in the history (delivered) or the last error (failed)
	}{
		{"unsigned, sync", false, profile.MDNSync, persistence.DeliveryDelivered, "receipt without MIC"},
		{"unsigned, async", false, profile.MDNAsync, persistence.DeliveryDelivered, "receipt without MIC"},
		{"signed, sync", true, profile.MDNSync, persistence.DeliveryFailed, "no Received-Content-MIC for a signed message"},
		{"signed, async", true, profile.MDNAsync, persistence.DeliveryFailed, "no Received-Content-MIC for a signed message"},
	}
	mods := moduleSchemas(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbtest.ForEachModules(t, mods, func(t *testing.T, s *db.Store) {
				b, p := harness(t, s, func(o *profile.Outbound) {
					o.Remote.MDNMode = tt.mode
					if !tt.signed {
						o.Remote.SigningAlgorithm, o.Remote.Compress = profile.SignNone, false
					}
				})
				if tt.mode == profile.MDNSync {
					p.setAnswer(p.answerMDN(noMIC))
				}
				msg := b.ingest(t, "order.edi", testPayload())
				d, _ := b.attempt(t, time.Now())
				if tt.mode == profile.MDNAsync {
					reqs := p.requests()
					if len(reqs) != 1 || reqs[0].err != nil {
						t.Fatalf("peer got %d requests", len(reqs))
					}
					ct, body, err := p.signedMDN(reqs[0], noMIC(reqs[0]))
					if err != nil {
						t.Fatal(err)
					}
					err = b.intake.AcceptMDN(context.Background(), ct, http.Header{"User-Agent": {"ACME async/2"}}, body)
					if err != nil {
						t.Fatalf("AcceptMDN: %v", err)
					}
				}
				got := b.delivery(t, d.ID)
				if got.State != tt.state {
					t.Fatalf("delivery %s (%s), want %s", got.State, got.LastError, tt.state)
				}
				recs := b.records(t, msg.ID)
				if len(recs) != 1 || recs[0].MDN == nil {
					t.Fatalf("records %+v", recs)
				}
				mdn := recs[0].MDN
				if tt.state == persistence.DeliveryDelivered {
					if !b.historyHas(t, msg.ID, tt.text) || !strings.HasPrefix(mdn.Note, tt.text) || mdn.Verdict != VerdictAccepted || mdn.MICMatched {
						t.Errorf("MDN record %+v; history noted %q: %v", mdn, tt.text, b.historyHas(t, msg.ID, tt.text))
					}
					return
				}
				if !strings.Contains(got.LastError, tt.text) || !strings.Contains(got.LastError, "ask the partner") || mdn.Note != "" {
					t.Errorf("last error %q, note %q", got.LastError, mdn.Note)
				}
			})
		})
	}
}
