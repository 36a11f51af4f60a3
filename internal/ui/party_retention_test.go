package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"wharf/internal/persistence"
)

func TestPartyRetentionPage(t *testing.T) {
	pb := setupPages(t)
	ctx := context.Background()
	wantRedirect(t, pb.post(t, "/ui/partners", url.Values{"name": {"acme"}}), "/ui/partners/acme")
	// The store keeps bookkeeping entries beside the settings; the page reads only its own.
	if _, err := pb.store.Seed(ctx, persistence.SeedData{}); err != nil {
		t.Fatal(err)
	}
	if err := pb.store.PutSetting(ctx, "payload_retention_days", "45"); err != nil {
		t.Fatal(err)
	}
	if body := pb.get(t, "/ui/partners/acme", http.StatusOK); !strings.Contains(body, `href="/ui/partners/acme/retention"`) {
		t.Errorf("the partner page does not link its retention:\n%s", body)
	}
	body := pb.get(t, "/ui/partners/acme/retention", http.StatusOK)
	for _, want := range []string{`name="payload_retention_days" type="text" inputmode="numeric" maxlength="6" autocomplete="off" value=""`, "the global 45", "the global 365"} {
		if !strings.Contains(body, want) {
			t.Errorf("form lacks %q:\n%s", want, body)
		}
	}
	wantRedirect(t, pb.post(t, "/ui/partners/acme/retention", url.Values{"payload_retention_days": {" 30 "}, "history_retention_days": {""}}), "/ui/partners/acme")
	pr, err := pb.store.GetPartyRetention(ctx, persistence.PartyPartner, "acme")
	if err != nil || pr.PayloadDays == nil || *pr.PayloadDays != 30 || pr.HistoryDays != nil {
		t.Fatalf("stored %+v, %v; want 30 payload days and the global history", pr, err)
	}
	if body := pb.get(t, "/ui/partners/acme/retention", http.StatusOK); !strings.Contains(body, `value="30"`) {
		t.Errorf("the form does not show the stored 30 days:\n%s", body)
	}
	wantRedirect(t, pb.post(t, "/ui/partners/acme/retention", url.Values{"payload_retention_days": {""}, "history_retention_days": {""}}), "/ui/partners/acme")
	if pr, _ := pb.store.GetPartyRetention(ctx, persistence.PartyPartner, "acme"); pr.PayloadDays != nil {
		t.Errorf("emptied fields kept %+v", pr)
	}
	if r := pb.post(t, "/ui/partners/nobody/retention", url.Values{"payload_retention_days": {"1"}}); r.status != http.StatusNotFound {
		t.Errorf("unknown partner: %d", r.status)
	}
}
