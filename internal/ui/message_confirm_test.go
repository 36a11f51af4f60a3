package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"

	_ "wharf/internal/protocol/as2"
)

// TestRedeliverOffersResendChoice: a delivered delivery to a target whose messages keep
// an identity (the AS2 sender) offers the same or a new message id on its confirmation,
// the same by default, and the choice made is the history's.
func TestRedeliverOffersResendChoice(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	ctx := context.Background()
	const as2Out = persistence.InstanceName("as2out")
	if _, err := b.store.CreatePluginConfig(ctx, persistence.PluginConfig{Name: as2Out, Type: persistence.PluginAS2Sender, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	m := b.insert(t, 1, acmeParty, as2Out)[0]
	claims, err := b.store.ClaimDeliveries(ctx, as2Out, 10, time.Minute, time.Now())
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim = %d, %v", len(claims), err)
	}
	d := claims[0].Delivery
	action := fmt.Sprintf("/ui/messages/%d/deliveries/%d/redeliver", m.ID, d.ID)

	// Delivered: its confirmation offers the choice.
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID,
		Token: d.ClaimToken, Kind: persistence.OutcomeDelivered, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	confirm := c.get(t, action)
	for _, want := range []string{`name="resend" type="radio" value="same_message_id" checked`, `name="resend" type="radio" value="new_message"`} {
		if confirm.status != http.StatusOK || !strings.Contains(confirm.body, want) {
			t.Fatalf("confirmation page = %d lacks %q:\n%s", confirm.status, want, confirm.body)
		}
	}
	token := match(t, csrfRE, confirm.body)
	r := c.post(t, action, url.Values{session.CSRFField: {token}, "confirm": {"yes"}, "resend": {"new_message"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("redeliver = %d\n%s", r.status, r.body)
	}
	hist, err := b.store.ListHistory(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, h := range hist {
		if h.Kind == persistence.HistoryRedeliverRequested {
			reasons = append(reasons, h.Reason)
		}
	}
	if len(reasons) != 1 || reasons[0] != persistence.ResendNew.Reason() {
		t.Fatalf("redeliver history = %q, want %q", reasons, persistence.ResendNew.Reason())
	}
}
