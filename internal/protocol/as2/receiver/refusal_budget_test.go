package receiver

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/settings"
)

// Refused bodies are kept per partner only up to refused_body_budget_mib over 24 hours:
// the first refusals keep their raw body, the ones after the budget is used up are
// still recorded (reason, headers, MDN, disposition) but without the body, and the
// record says why; another partner's budget is its own.
func TestRefusedBodyBudget(t *testing.T) {
	org, acme, beta := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "beta")
	payload := bytes.Repeat([]byte("UNH+1+ORDERS:D:96A:UN'\r\n"), (300<<10)/24)
	const budget = 1 << 20
	for _, dialect := range dbtest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := reopenable(t, dialect)()
			b := newBench(t, s, []party{org}, []party{acme, beta})
			dir := newDirectory()
			dir.add(inbound(org, acme, nil))
			dir.add(inbound(org, beta, nil))
			rc := b.start("as2_in", dir, nil)
			if err := s.PutSetting(b.ctx, settings.RefusedBodyBudgetMiB, "1"); err != nil {
				t.Fatal(err)
			}

			// refuse sends an unsigned message, which the secure profile refuses, and
			// returns the record kept of it.
			refuse := func(from party) (request, RefusalRecord, persistence.Message) {
				t.Helper()
				opts := secureOpts(from, org)
				opts.Sign = nil
				req := build(t, from, org, payload, "orders.edi", opts)
				m := parseMDN(t, post(t, rc.url(), req.contentType, req.header, req.body), org.cert)
				if got := m.Disposition.ModifierText(); got != "insufficient-message-security" {
					t.Fatalf("disposition %q", got)
				}
				msg := b.refused(req.header.Get("Message-ID"))
				rec, err := FindRefusal(b.ctx, s.ModuleSQL(), msg.ID)
				if err != nil {
					t.Fatal(err)
				}
				return req, rec, msg
			}

			var used int64
			kept, withheld := 0, 0
			for i := range 6 {
				req, rec, msg := refuse(acme)
				if rec.Reason == "" || rec.MDNMessageID == "" || rec.BodySize != int64(len(req.body)) || rec.BodyCutShort {
					t.Errorf("refusal %d: record %+v", i, rec)
				}
				if h := b.payload(msg.ID, persistence.PayloadHeaders); len(h) == 0 {
					t.Errorf("refusal %d: no headers stage", i)
				}
				if r := b.payload(msg.ID, persistence.PayloadReceipt); !bytes.Contains(r, []byte(rec.MDNMessageID)) {
					t.Errorf("refusal %d: the receipt stage is not the MDN answered", i)
				}
				if used < budget {
					kept++
					used += int64(len(req.body))
					if got := b.payload(msg.ID, persistence.PayloadReceived); !bytes.Equal(got, req.body) ||
						rec.BodyKept != int64(len(req.body)) || rec.BodyWithheld != "" {
						t.Errorf("refusal %d within the budget: %d bytes kept, record %+v", i, len(got), rec)
					}
					continue
				}
				withheld++
				if _, err := s.GetPayload(b.ctx, msg.ID, persistence.PayloadReceived); !errors.Is(err, persistence.ErrNotFound) {
					t.Errorf("refusal %d over the budget: received stage kept (%v)", i, err)
				}
				want := "raw body not kept: partner's refused-body budget of 1 MiB per 24 h used up"
				if rec.BodyKept != 0 || rec.BodyWithheld != want {
					t.Errorf("refusal %d over the budget: record %+v", i, rec)
				}
			}
			t.Logf("%d refusals of %d bytes kept their body, %d did not", kept, len(payload), withheld)
			if kept == 0 || withheld == 0 {
				t.Fatalf("%d refusals kept their body and %d did not; the test needs both", kept, withheld)
			}

			// Another partner's refusal keeps its body.
			req, rec, msg := refuse(beta)
			if got := b.payload(msg.ID, persistence.PayloadReceived); !bytes.Equal(got, req.body) || rec.BodyWithheld != "" {
				t.Errorf("other partner: %d bytes kept, record %+v", len(got), rec)
			}

			// A budget of 0 keeps no body.
			if err := s.PutSetting(b.ctx, settings.RefusedBodyBudgetMiB, "0"); err != nil {
				t.Fatal(err)
			}
			if _, rec, _ := refuse(beta); rec.BodyKept != 0 || !strings.Contains(rec.BodyWithheld, "budget of 0 MiB") {
				t.Errorf("budget 0: record %+v", rec)
			}
		})
	}
}
