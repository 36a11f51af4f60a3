package ui

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

func TestHealthOf(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		a     persistence.PartnerActivity
		tone  string
		label string
	}{
		{"no traffic yet", persistence.PartnerActivity{}, "neutral", "no traffic yet"},
		{"ok", persistence.PartnerActivity{Ever: true, CertificateExpiry: now.AddDate(1, 0, 0)}, "success", "ok"},
		{"one problem", persistence.PartnerActivity{Ever: true, Problems: 1}, "danger", "1 problem"},
		{"paused before problems", persistence.PartnerActivity{Ever: true, Problems: 3, Pause: &persistence.PartnerPause{Waiting: 1}}, "danger", "paused, 1 delivery waits"},
		{"problems before the certificate", persistence.PartnerActivity{Ever: true, Problems: 3, CertificateExpiry: now}, "danger", "3 problems"},
		{"certificate expiring", persistence.PartnerActivity{Ever: true, CertificateExpiry: now.AddDate(0, 0, 10)}, "warning", "certificate expiring 2026-03-11"},
		{"certificate expired", persistence.PartnerActivity{CertificateExpiry: now.AddDate(0, 0, -1)}, "danger", "certificate expired 2026-02-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h := healthOf(tc.a, now, time.UTC); h.Tone != tc.tone || h.Label != tc.label {
				t.Errorf("health = %s %q, want %s %q", h.Tone, h.Label, tc.tone, tc.label)
			}
		})
	}
}

func TestPartnerPageAndListHealth(t *testing.T) {
	b := setupMessages(t)
	b.clock.now = time.Now().UTC() // the store stamps messages with the real time
	c := b.signedIn(t)
	in := b.insert(t, 2, acmeParty, writerInst)
	refused := b.sent(t, acmeParty, func(m *persistence.Message) {
		m.From, m.To, m.Refusal = acmeParty, localParty, persistence.RefusalRefused
	})
	ctx := context.Background()
	if _, err := b.store.UpdateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: acmeParty, DisplayName: "ACME Corp"}); err != nil {
		t.Fatal(err)
	}

	r := c.get(t, "/ui/partners/acme")
	if r.status != http.StatusOK {
		t.Fatalf("GET partner = %d\n%s", r.status, r.body)
	}
	for _, want := range []string{
		`<span class="badge badge-danger" id="partner-health">1 problem</span>`,
		`<dt>Failed or refused, 24 h</dt><dd>1 of 3 (33%)</dd>`,
		`<dt>Last delivered to them</dt><dd>never</dd>`,
		`href="/ui/messages?partner=acme"`,
		`No certificate is set for this partner.`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("partner page lacks %q", want)
		}
	}
	traffic := regexp.MustCompile(`(?s)id="partner-traffic".*?</table>`).FindString(r.body)
	for _, m := range append(in, refused) {
		if !strings.Contains(traffic, fmt.Sprintf(`href="/ui/messages/%d"`, m.ID)) {
			t.Errorf("recent traffic lacks message %d", m.ID)
		}
	}
	problems := regexp.MustCompile(`(?s)id="partner-problems".*?</table>`).FindString(r.body)
	if !strings.Contains(problems, fmt.Sprintf(`href="/ui/messages/%d"`, refused.ID)) || strings.Contains(problems, fmt.Sprintf(`href="/ui/messages/%d"`, in[0].ID)) {
		t.Errorf("open problems = %s", problems)
	}
	if r := c.get(t, "/ui/partners/beta"); !strings.Contains(r.body, `id="partner-health">no traffic yet</span>`) {
		t.Error("beta's page does not say it has no traffic yet")
	}
	if r := c.get(t, "/ui/organizations/local"); strings.Contains(r.body, `id="partner-health"`) {
		t.Error("an organization's page shows a partner's health")
	}

	list := c.get(t, "/ui/partners").body
	for _, want := range []string{`<td class="col-key"><span class="badge badge-danger">1 problem</span></td>`,
		`<td class="col-key"><span class="badge badge-neutral">no traffic yet</span></td>`} {
		if !strings.Contains(list, want) {
			t.Errorf("partner list lacks %q", want)
		}
	}
}
