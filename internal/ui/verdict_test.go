package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

func TestVerdictOf(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	msg := func(st persistence.MessageStatus) persistence.Message {
		return persistence.Message{ID: 7, From: "local", To: "acme", Status: st}
	}
	dl := func(target string, st persistence.DeliveryState, lastError string) persistence.Delivery {
		return persistence.Delivery{Target: persistence.InstanceName(target), State: st, LastError: lastError}
	}
	retrying := dl("as2_sender_default", persistence.DeliveryRetrying, "dial tcp: connection refused")
	retrying.NextAttemptAt = &at
	awaitingAck := dl("erp", persistence.DeliveryAwaitingAck, "")
	awaitingAck.AckDeadline = &at
	out := persistence.DirectionOutbound
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   verdictInput
		want verdict
	}{
		{"delivered with a receipt", verdictInput{Message: msg(persistence.StatusDelivered), Direction: out, Partner: "ACME",
			Deliveries: []persistence.Delivery{dl("as2_sender_default", persistence.DeliveryDelivered, "")},
			Facts:      &module.MessageFacts{Receipt: "signed receipt verified, MIC matched"}},
			verdict{Tone: "success", Text: "Delivered — signed receipt verified, MIC matched"}},
		{"delivered without a protocol", verdictInput{Message: msg(persistence.StatusDelivered),
			Deliveries: []persistence.Delivery{dl("archive", persistence.DeliveryDelivered, ""), dl("erp", persistence.DeliveryDelivered, "")}},
			verdict{Tone: "success", Text: "Delivered to archive, erp"}},
		{"received and delivered", verdictInput{Message: msg(persistence.StatusDelivered), Direction: persistence.DirectionInbound, Partner: "ACME",
			Deliveries: []persistence.Delivery{dl("inbox", persistence.DeliveryDelivered, "")},
			Facts:      &module.MessageFacts{Receipt: "we answered a signed receipt (sync)"}},
			verdict{Tone: "success", Text: "Received from ACME and delivered to inbox — we answered a signed receipt (sync)"}},
		{"refused by the partner", verdictInput{Message: msg(persistence.StatusError), Direction: out, Partner: "ACME",
			Facts: &module.MessageFacts{RefusedByPartner: true, Problem: "they could not verify our signature — do they have our certificate CN=us, expiring 2027-01-01?", Fix: "Send them our certificate."}},
			verdict{Tone: "danger", Text: "Refused by ACME: they could not verify our signature — do they have our certificate CN=us, expiring 2027-01-01?", Fix: "Send them our certificate."}},
		{"refused by us", verdictInput{Message: msg(persistence.StatusRefused), Direction: persistence.DirectionInbound, Partner: "ACME",
			Facts: &module.MessageFacts{RefusedByUs: true, Problem: "we could not decrypt it", Fix: "Send them our current certificate."}},
			verdict{Tone: "danger", Text: "Refused: we could not decrypt it", Fix: "Send them our current certificate."}},
		{"refused without a module", verdictInput{Message: msg(persistence.StatusRefused)},
			verdict{Tone: "danger", Text: "Refused: the source refused it; its history says why"}},
		{"waiting for the receipt", verdictInput{Message: msg(persistence.StatusAwaitingReceipt), Direction: out, Partner: "ACME",
			Facts: &module.MessageFacts{AwaitingUntil: at}},
			verdict{Tone: "info", Text: "Waiting for ACME's receipt until 2026-03-01 10:30:00 UTC"}},
		{"waiting for a completion report", verdictInput{Message: msg(persistence.StatusAwaitingReceipt),
			Deliveries: []persistence.Delivery{awaitingAck}},
			verdict{Tone: "info", Text: "Waiting for erp to report completion until 2026-03-01 10:30:00 UTC"}},
		{"waiting, in the display zone", verdictInput{Message: msg(persistence.StatusAwaitingReceipt), Direction: out, Partner: "ACME",
			Facts: &module.MessageFacts{AwaitingUntil: at}, Zone: kolkata},
			verdict{Tone: "info", Text: "Waiting for ACME's receipt until 2026-03-01 16:00:00 IST"}},
		{"a module's moment, in the display zone", verdictInput{Message: msg(persistence.StatusError), Direction: out, Partner: "ACME",
			Facts: &module.MessageFacts{RefusedByPartner: true, Problem: "do they have our certificate CN=us, expiring 2027-01-01T00:00:00Z?",
				Fix: "Send it before 2027-01-01T00:00:00Z."}, Zone: kolkata},
			verdict{Tone: "danger", Text: "Refused by ACME: do they have our certificate CN=us, expiring 2027-01-01 05:30:00 IST?",
				Fix: "Send it before 2027-01-01 05:30:00 IST."}},
		{"held", verdictInput{Message: msg(persistence.StatusHeld)},
			verdict{Tone: "warning", Text: "Held: an earlier message of its session failed",
				Fix: "Redeliver or settle the earlier message of the session; this one goes out after it."}},
		{"retrying with advice", verdictInput{Message: msg(persistence.StatusRetrying), Direction: out, Partner: "ACME",
			Deliveries: []persistence.Delivery{retrying},
			Facts:      &module.MessageFacts{Problem: "their server could not be reached", Fix: "Run the connection check."}},
			verdict{Tone: "warning", Text: "Retrying: their server could not be reached; next attempt 2026-03-01 10:30:00 UTC", Fix: "Run the connection check."}},
		{"retrying without a module", verdictInput{Message: msg(persistence.StatusRetrying), Deliveries: []persistence.Delivery{retrying}},
			verdict{Tone: "warning", Text: "Retrying: dial tcp: connection refused; next attempt 2026-03-01 10:30:00 UTC"}},
		{"failed", verdictInput{Message: msg(persistence.StatusError),
			Deliveries: []persistence.Delivery{dl("archive", persistence.DeliveryDelivered, ""), dl("erp", persistence.DeliveryFailed, "HTTP 500")}},
			verdict{Tone: "danger", Text: "Failed: erp: HTTP 500"}},
		{"failed with the module's reading", verdictInput{Message: msg(persistence.StatusError), Direction: out, Partner: "ACME",
			Deliveries: []persistence.Delivery{dl("as2_sender_default", persistence.DeliveryFailed, "MDN MIC x does not match")},
			Facts:      &module.MessageFacts{Problem: "their receipt's MIC does not match what we sent", Fix: "Ask for their MIC algorithm."}},
			verdict{Tone: "danger", Text: "Failed: their receipt's MIC does not match what we sent", Fix: "Ask for their MIC algorithm."}},
		{"stalled", verdictInput{Message: msg(persistence.StatusStalled), Deliveries: []persistence.Delivery{dl("erp", persistence.DeliveryStalled, "")}},
			verdict{Tone: "danger", Text: "Stalled: no worker took it to erp", Fix: "Check that erp is running on the Services page, then redeliver."}},
		{"not routed", verdictInput{Message: msg(persistence.StatusNotRouted)},
			verdict{Tone: "warning", Text: "Not routed: no route takes messages from local to acme", Fix: "Add a route on the Routes page, then redispatch."}},
		{"skipped", verdictInput{Message: msg(persistence.StatusSkipped)}, verdict{Tone: "neutral", Text: "Skipped: no delivery was made"}},
		{"in progress", verdictInput{Message: msg(persistence.StatusInProgress), Deliveries: []persistence.Delivery{dl("erp", persistence.DeliveryQueued, "")}},
			verdict{Tone: "info", Text: "On its way to erp"}},
		{"received", verdictInput{Message: msg(persistence.StatusReceived)}, verdict{Tone: "info", Text: "Received; not dispatched yet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verdictOf(tc.in); got != tc.want {
				t.Errorf("verdict = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}

// factsOf is a module's reading held in memory.
type factsOf map[int64]module.MessageFacts

func (f factsOf) MessageFacts(_ context.Context, id int64) (module.MessageFacts, bool, error) {
	v, ok := f[id]
	return v, ok, nil
}

func TestMessagePageLeadsWithTheVerdict(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	in := b.insert(t, 1, acmeParty, writerInst)[0]
	out := b.sent(t, betaParty, nil)
	b.ui.facters = []module.MessageFacter{factsOf{out.ID: {RefusedByPartner: true,
		Problem: "they could not verify our signature", Fix: "Send them our certificate."}}}

	for _, tc := range []struct {
		id   int64
		want []string
	}{
		{in.ID, []string{`<span class="badge badge-neutral">inbound</span> from <a href="/ui/partners/acme">acme</a>`,
			`<p class="verdict-text">On its way to writer</p>`}},
		{out.ID, []string{`<span class="badge badge-neutral">outbound</span> to <a href="/ui/partners/beta">beta</a>`,
			`<div class="verdict verdict-danger" id="message-verdict">`,
			`<p class="verdict-text">Refused by beta: they could not verify our signature</p>`,
			`<strong>What to do:</strong> Send them our certificate.`}},
	} {
		r := c.get(t, fmt.Sprintf("/ui/messages/%d", tc.id))
		if r.status != http.StatusOK {
			t.Fatalf("GET %d = %d", tc.id, r.status)
		}
		verdictAt := strings.Index(r.body, `id="message-verdict"`)
		if verdictAt < 0 || verdictAt > strings.Index(r.body, `<dl class="details-list">`) {
			t.Errorf("message %d: the verdict does not come first", tc.id)
		}
		for _, want := range tc.want {
			if !strings.Contains(r.body, want) {
				t.Errorf("message %d lacks %q", tc.id, want)
			}
		}
	}
}
