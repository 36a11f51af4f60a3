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
)

// deliverAll completes every claimable delivery of target as delivered.
func (b *messagesBundle) deliverAll(t *testing.T, target persistence.InstanceName) {
	t.Helper()
	ctx := context.Background()
	claims, err := b.store.ClaimDeliveries(ctx, target, 100, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: c.Delivery.ID,
			Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered, At: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEraseAMessageFromItsPage(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	b.deliverAll(t, writerInst)
	page := fmt.Sprintf("/ui/messages/%d", m.ID)
	if body := c.get(t, page).body; !strings.Contains(body, page+`/erase">Erase…</a>`) {
		t.Fatalf("the message page offers no erasure:\n%s", body)
	}
	confirm := c.get(t, page+"/erase")
	if confirm.status != http.StatusOK || !strings.Contains(confirm.body, "cannot be undone") || !strings.Contains(confirm.body, string(m.OriginalFileName)) {
		t.Fatalf("confirmation = %d\n%s", confirm.status, confirm.body)
	}
	token := match(t, csrfRE, confirm.body)
	// Without its confirmation the POST goes back to the confirmation and erases nothing.
	if r := c.post(t, page+"/erase", url.Values{session.CSRFField: {token}}); r.status != http.StatusSeeOther {
		t.Fatalf("unconfirmed erase = %d", r.status)
	}
	if got, _ := b.store.GetMessage(context.Background(), m.ID); got.ErasedAt != nil {
		t.Fatal("an unconfirmed erase erased")
	}
	if r := c.post(t, page+"/erase", url.Values{session.CSRFField: {token}, "confirm": {"yes"}}); r.status != http.StatusSeeOther {
		t.Fatalf("erase = %d\n%s", r.status, r.body)
	}
	body := c.get(t, page).body
	for _, want := range []string{`id="message-erased"`, "The message&#39;s content is erased"} {
		if !strings.Contains(body, want) {
			t.Errorf("the erased message's page lacks %q", want)
		}
	}
	for _, gone := range []string{string(m.OriginalFileName), page + `/erase"`, page + `/redispatch"`} {
		if strings.Contains(body, gone) {
			i := strings.Index(body, gone)
			t.Errorf("the erased message's page still shows %q: %s", gone, body[max(0, i-300):i+50])
		}
	}
	if r := c.get(t, page+"/payload"); r.status != http.StatusGone || !strings.Contains(r.body, "erased") {
		t.Fatalf("download of an erased payload = %d %s", r.status, r.body)
	}
	// Again: refused with a flash, nothing changes.
	c.post(t, page+"/erase", url.Values{session.CSRFField: {token}, "confirm": {"yes"}})
	if body := c.get(t, page).body; !strings.Contains(body, "Erasure refused") {
		t.Fatalf("a second erasure is not refused:\n%s", body)
	}
}

func TestErasePageConfirmsHowMany(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	done := b.insert(t, 2, acmeParty, writerInst)
	b.deliverAll(t, writerInst)
	b.insert(t, 1, acmeParty, writerInst) // still queued
	b.insert(t, 1, betaParty, writerInst)
	page := c.get(t, "/ui/erasures")
	if page.status != http.StatusOK {
		t.Fatalf("erasure page = %d", page.status)
	}
	token := match(t, csrfRE, page.body)
	today := time.Now().UTC().Format("2006-01-02")
	form := url.Values{session.CSRFField: {token}, "party": {"acme"}, "from": {today}, "to": {today}}
	r := c.post(t, "/ui/erasures", form)
	for _, want := range []string{"Erase the content of 2 messages of acme", "deliveries are still under way: 1", "Erase 2 messages</button>"} {
		if r.status != http.StatusOK || !strings.Contains(r.body, want) {
			t.Fatalf("confirmation = %d lacks %q\n%s", r.status, want, r.body)
		}
	}
	if got, _ := b.store.GetMessage(context.Background(), done[0].ID); got.ErasedAt != nil {
		t.Fatal("counting erased")
	}
	form.Set("confirm", "yes")
	r = c.post(t, "/ui/erasures", form)
	if r.status != http.StatusOK || !strings.Contains(r.body, "<dt>Messages of acme erased</dt><dd>2</dd>") {
		t.Fatalf("erasure = %d\n%s", r.status, r.body)
	}
	for _, m := range done {
		if got, _ := b.store.GetMessage(context.Background(), m.ID); got.ErasedAt == nil {
			t.Fatalf("message %d not erased", m.ID)
		}
	}
}

func TestErasureIsForAdministrators(t *testing.T) {
	b := setupMessages(t)
	b.signedIn(t) // the first user, an administrator
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	b.deliverAll(t, writerInst)
	c, token, _ := b.bundle.signedIn(t, "oscar", persistence.RoleOperator)
	page := fmt.Sprintf("/ui/messages/%d", m.ID)
	if body := c.get(t, page).body; strings.Contains(body, page+"/erase") {
		t.Fatal("an operator is offered the erasure")
	}
	for _, r := range []response{
		c.get(t, "/ui/erasures"),
		c.get(t, page+"/erase"),
		c.post(t, page+"/erase", url.Values{session.CSRFField: {token}, "confirm": {"yes"}}),
		c.post(t, "/ui/erasures", url.Values{session.CSRFField: {token}, "party": {"acme"}, "from": {"2026-01-01"}, "to": {"2027-01-01"}, "confirm": {"yes"}}),
	} {
		if r.status != http.StatusForbidden {
			t.Fatalf("an operator's request = %d, want 403", r.status)
		}
	}
	if got, _ := b.store.GetMessage(context.Background(), m.ID); got.ErasedAt != nil {
		t.Fatal("an operator erased a message")
	}
}
