package ui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"wharf/internal/alert"
	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
	"wharf/internal/storage"
)

// TestPartnerPageOpenAlerts: a partner's page lists the open alerts about the partner,
// its messages and its certificates, each linked; resolved alerts and other partners'
// are left out.
func TestPartnerPageOpenAlerts(t *testing.T) {
	nb := setupNotifications(t)
	ctx := context.Background()
	messageFixture(t, nb.store)
	blobs, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mb := &messagesBundle{bundle: nb.bundle, blobs: blobs}
	fromAcme, fromBeta := mb.insert(t, 2, acmeParty)[:2], mb.insert(t, 1, betaParty)[0]

	if body := nb.get(t, "/ui/partners/acme", http.StatusOK); !strings.Contains(body, "No open alert about this partner") {
		t.Error("the partner page lacks the empty alerts list")
	}
	parsed, err := certs.Parse(certstest.CertsPEM(certstest.CA(t, "acme-signing").Cert), "")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := certs.Records(parsed, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := nb.store.CreateCertificates(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := nb.store.SetCertificateUses(ctx, "as2_remote_profile", string(acmeParty), []int64{stored[0].ID}); err != nil {
		t.Fatal(err)
	}
	accept := func(a alert.Alert) {
		t.Helper()
		if err := nb.rt.Accept(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	msgAlert := func(m persistence.Message, summary string) alert.Alert {
		id := strconv.FormatInt(m.ID, 10)
		return alert.Alert{Code: alert.MessageFailed, Summary: summary, Subject: alert.Subject{Kind: "message", ID: id}, Link: "/ui/messages/" + id}
	}
	certID := strconv.FormatInt(stored[0].ID, 10)
	accept(msgAlert(fromAcme[0], "Acme's first message failed"))
	accept(msgAlert(fromAcme[1], "Acme's second message failed"))
	accept(msgAlert(fromBeta, "Beta's message failed"))
	accept(alert.Alert{Code: alert.CertificateExpiring, Summary: "Acme's certificate expires in 9 days",
		Subject: alert.Subject{Kind: "certificate", ID: certID}, Link: "/ui/certificates/" + certID})
	accept(alert.Resolution(alert.MessageFailed, alert.Subject{Kind: "message", ID: strconv.FormatInt(fromAcme[1].ID, 10)}))

	body := nb.get(t, "/ui/partners/acme", http.StatusOK)
	for _, want := range []string{
		`id="partner-alerts"`,
		fmt.Sprintf(`<a class="wrap" href="/ui/messages/%d">Acme&#39;s first message failed</a>`, fromAcme[0].ID),
		`<a class="wrap" href="/ui/certificates/` + certID + `">Acme&#39;s certificate expires in 9 days</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the partner page lacks %s", want)
		}
	}
	for _, not := range []string{"second message failed", "Beta&#39;s message"} {
		if strings.Contains(body, not) {
			t.Errorf("the partner page shows %q", not)
		}
	}
}
