package as2

import (
	"strings"
	"testing"
	"time"

	"wharf/internal/protocol/as2/profile"
	"wharf/internal/protocol/as2/sender"
)

// TestOutboundGroups: a message sent is told in the four groups, by AS2 ids and party
// names, never by the records' internal ids, its times in RFC 3339 for the page's zone.
func TestOutboundGroups(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	first := sender.OutboundRecord{ID: 11, DeliveryID: 22, MessageID: 33, AS2MessageID: "<first@us>"}
	last := sender.OutboundRecord{ID: 12, DeliveryID: 22, MessageID: 33, AS2MessageID: "<second@us>", Organization: "local",
		Partner: "acme", AS2From: "US", AS2To: "ACME", SigningAlgorithm: profile.SignSHA256, MDNMode: profile.MDNSync,
		SignedMDN: true, MICAlgorithm: "sha256", Attempts: 2, FirstSentAt: at, LastSentAt: at, Outcome: sender.OutcomeDelivered,
		HTTPStatus: 200, MDN: &sender.MDNRecord{Verdict: sender.VerdictAccepted, ReceivedAt: at, Signed: true,
			Signer: "CN=ACME", MICMatched: true}}
	got := outboundGroups([]sender.OutboundRecord{first, last})
	lines := map[string]string{}
	var titles []string
	for _, g := range got {
		titles = append(titles, g.Title)
		for _, d := range g.Details {
			lines[g.Title+"/"+d.Label] = d.Value
		}
	}
	if strings.Join(titles, ",") != "Identity,Security,Receipt,Transport" {
		t.Errorf("groups = %v", titles)
	}
	for key, want := range map[string]string{
		"Identity/AS2 Message-ID":  "<second@us>",
		"Identity/From":            "US (local)",
		"Identity/To":              "ACME (acme)",
		"Security/Signed":          "sha256",
		"Security/Encrypted":       "no",
		"Receipt/Signed":           "yes, by CN=ACME",
		"Receipt/MIC matched":      "yes",
		"Receipt/Received":         "2026-03-01T09:00:00Z",
		"Transport/Sent before as": "<first@us>",
	} {
		if lines[key] != want {
			t.Errorf("%s = %q, want %q", key, lines[key], want)
		}
	}
	for key, v := range lines {
		if v == "11" || v == "12" || v == "22" || v == "33" || strings.HasSuffix(key, " ID") {
			t.Errorf("%s shows an internal id: %q", key, v)
		}
	}
}
