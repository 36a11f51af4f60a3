package sender

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/profile"
)

// An async MDN the intake refuses raises async_mdn_failed for the message it names.
func TestRefusedAsyncMDNRaisesAlert(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNAsync })
		r := &alerttest.Recorder{}
		b.intake.alerts = r
		b.ingest(t, "po.edi", []byte("PO 1\r\n"))
		d, res := b.attempt(t, time.Now())
		if res.Kind != persistence.OutcomeAwaitingAck {
			t.Fatalf("result %s %v", res.Kind, res.Err)
		}
		rcv := p.requests()[0]
		ct, body, err := p.signedMDN(rcv, mdnSpec{Disposition: processed, MIC: requestedMIC(rcv), Tamper: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.intake.AcceptMDN(context.Background(), ct, http.Header{}, body); !errors.Is(err, ErrInvalidMDN) {
			t.Fatalf("tampered MDN: %v", err)
		}
		if as := r.Alerts(); len(as) != 1 || as[0].Code != alert.AsyncMDNFailed || as[0].Subject.ID != strconv.FormatInt(d.MessageID, 10) {
			t.Fatalf("raised %+v", as)
		}
	})
}
