package as2

import (
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/protocol/as2/receiver"
	"wharf/internal/protocol/as2/sender"
)

// Every class has a sentence for the side it happens on, and the table never leaves a
// fix without its problem.
func TestAdviceTable(t *testing.T) {
	for _, tc := range []struct {
		class   failureClass
		side    side
		problem string // a part of the problem
		fix     string // a part of the fix
	}{
		{failAuthentication, outbound, "could not verify our signature — do they have our certificate CN=us, expiring 2027-01-01?", "Send them our signing certificate"},
		{failAuthentication, inbound, "their signature did not verify", "add it to the partner's certificates"},
		{failDecryption, outbound, "encrypted to their certificate CN=us, expiring 2027-01-01", "which certificate they decrypt with"},
		{failDecryption, inbound, "we could not decrypt it", "previous decryption certificate"},
		{failDecompression, outbound, "could not decompress", "Turn compression off"},
		{failDecompression, inbound, "compressed layer was broken", "check its compression"},
		{failIntegrity, outbound, "did not match its signature", "redeliver"},
		{failIntegrity, inbound, "did not match its signature", "send it again"},
		{failSecurity, outbound, "demand signing or encryption", "Turn on signing and encryption"},
		{failSecurity, inbound, "not signed or encrypted", "require signed"},
		{failDuplicateDoc, outbound, "replay", "Redeliver as a new message"},
		{failDuplicateDoc, inbound, "replay", "new signature"},
		{failDuplicateName, outbound, "a file of this name", "another file name"},
		{failDuplicateName, inbound, "a file of this name", "duplicate file name rule"},
		{failUnexpected, outbound, "their side failed", "logs"},
		{failUnexpected, inbound, "on our side", "logs"},
		{failMIC, outbound, "MIC does not match", "MIC algorithm"},
		{failNoReceipt, outbound, "no receipt came", "asynchronous MDN URL"},
		{failHTTP, outbound, "refused the request", "endpoint URL"},
		{failUnreachable, outbound, "could not be reached", "connection check"},
	} {
		t.Run(string(tc.class), func(t *testing.T) {
			a, ok := adviceFor(tc.class, tc.side, "CN=us, expiring 2027-01-01")
			if !ok || !strings.Contains(a.problem, tc.problem) || !strings.Contains(a.fix, tc.fix) {
				t.Errorf("advice = %+v, %v; want problem with %q, fix with %q", a, ok, tc.problem, tc.fix)
			}
		})
	}
	for _, c := range []failureClass{failMIC, failNoReceipt, failHTTP, failUnreachable, failOther, "made-up"} {
		if a, ok := adviceFor(c, inbound, ""); ok {
			t.Errorf("inbound %s has advice %+v", c, a)
		}
	}
	if a, _ := adviceFor(failAuthentication, outbound, ""); !strings.Contains(a.problem, "(none set)") {
		t.Errorf("no certificate: %q", a.problem)
	}
}

func TestClassOfDisposition(t *testing.T) {
	for d, want := range map[string]failureClass{
		"automatic-action/MDN-sent-automatically; processed/error: authentication-failed": failAuthentication,
		"automatic-action/MDN-sent-automatically; processed/Error: Decryption-Failed":     failDecryption,
		"automatic-action/MDN-sent-automatically; processed/error: something-new":         failOther,
		"automatic-action/MDN-sent-automatically; processed":                              "",
		"": "",
	} {
		got, ok := classOfDisposition(strings.ToLower(d))
		if got != want || ok != (want != "") {
			t.Errorf("classOfDisposition(%q) = %q, %v; want %q", d, got, ok, want)
		}
	}
}

func TestOutboundFacts(t *testing.T) {
	deadline := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cert := map[failureClass]string{failAuthentication: "CN=us, expiring 2027-01-01"}
	for _, tc := range []struct {
		name string
		rec  sender.OutboundRecord
		want module.MessageFacts
	}{
		{"signed receipt", sender.OutboundRecord{Outcome: sender.OutcomeDelivered,
			MDN: &sender.MDNRecord{Verdict: sender.VerdictAccepted, Signed: true, MICMatched: true}},
			module.MessageFacts{Receipt: "signed receipt verified, MIC matched"}},
		{"unsigned receipt", sender.OutboundRecord{Outcome: sender.OutcomeDelivered,
			MDN: &sender.MDNRecord{Verdict: sender.VerdictAccepted, MICMatched: true}},
			module.MessageFacts{Receipt: "unsigned receipt, MIC matched"}},
		{"awaiting", sender.OutboundRecord{Outcome: sender.OutcomeAwaiting, AckDeadline: &deadline},
			module.MessageFacts{AwaitingUntil: deadline}},
		{"refused: authentication", sender.OutboundRecord{Outcome: sender.OutcomeFailed, Reason: "MDN: authentication-failed",
			MDN: &sender.MDNRecord{Verdict: sender.VerdictRefused, Disposition: "automatic-action/MDN-sent-automatically; processed/error: authentication-failed"}},
			module.MessageFacts{RefusedByPartner: true, Problem: "they could not verify our signature — do they have our certificate CN=us, expiring 2027-01-01?",
				Fix: adviceTable[failAuthentication][outbound].fix}},
		{"MIC does not match", sender.OutboundRecord{Outcome: sender.OutcomeFailed, Reason: "MDN MIC x does not match",
			MDN: &sender.MDNRecord{Verdict: sender.VerdictRefused, Disposition: "automatic-action/MDN-sent-automatically; processed"}},
			module.MessageFacts{Problem: "their receipt's MIC does not match what we sent (MDN MIC x does not match)", Fix: adviceTable[failMIC][outbound].fix}},
		{"HTTP refusal", sender.OutboundRecord{Outcome: sender.OutcomeFailed, HTTPStatus: 413, Reason: "HTTP 413 too large"},
			module.MessageFacts{Problem: "their server refused the request (HTTP 413 too large)", Fix: adviceTable[failHTTP][outbound].fix}},
		{"unreachable, retrying", sender.OutboundRecord{Outcome: sender.OutcomeRetry, Reason: "dial tcp: connection refused"},
			module.MessageFacts{Problem: "their server could not be reached (dial tcp: connection refused)", Fix: adviceTable[failUnreachable][outbound].fix}},
		{"sending", sender.OutboundRecord{Outcome: sender.OutcomeSending}, module.MessageFacts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outboundFacts(tc.rec, cert); got != tc.want {
				t.Errorf("facts = %+v\nwant    %+v", got, tc.want)
			}
		})
	}
}

func TestRefusalAndInboundFacts(t *testing.T) {
	got := refusalFacts(receiver.RefusalRecord{Reason: "signature does not verify",
		Disposition: "automatic-action/MDN-sent-automatically; processed/error: authentication-failed"})
	want := module.MessageFacts{RefusedByUs: true, Problem: "their signature did not verify with their certificates (signature does not verify)",
		Fix: adviceTable[failAuthentication][inbound].fix}
	if got != want {
		t.Errorf("refusal facts = %+v", got)
	}
	if got := refusalFacts(receiver.RefusalRecord{Reason: "malformed"}); got.Problem != "malformed" || got.Fix != "" || !got.RefusedByUs {
		t.Errorf("refusal without MDN = %+v", got)
	}
	if got := inboundFacts(receiver.InboundRecord{MDNMode: "sync", MDNSigned: true}); got.Receipt != "we answered a signed receipt (sync)" {
		t.Errorf("inbound facts = %+v", got)
	}
}
