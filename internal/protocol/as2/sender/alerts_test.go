package sender

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/profile"
)

type raisedAlerts struct {
	mu sync.Mutex
	as []alert.Alert
}

func (r *raisedAlerts) Raise(a alert.Alert) {
	r.mu.Lock()
	r.as = append(r.as, a)
	r.mu.Unlock()
}

// An async MDN the intake refuses raises async_mdn_failed for the message it names.
func TestRefusedAsyncMDNRaisesAlert(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b, p := harness(t, s, func(o *profile.Outbound) { o.Remote.MDNMode = profile.MDNAsync })
		r := &raisedAlerts{}
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
		if len(r.as) != 1 || r.as[0].Code != alert.AsyncMDNFailed || r.as[0].Subject.ID != strconv.FormatInt(d.MessageID, 10) {
			t.Fatalf("raised %+v", r.as)
		}
	})
}
