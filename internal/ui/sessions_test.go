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

func (a storeActions) ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return a.store.ResubmitDeliveries(ctx, ids, actor)
}

func (a storeActions) SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return a.store.SkipDeliveries(ctx, ids, actor)
}

var _ SessionActions = storeActions{}

// The Sessions page lists a blocked session with its blocking delivery, error and parked
// count; Skip asks first, needs the CSRF token, and releases the session; the message page
// shows each delivery's session and place, and the dashboard counts the blocked session.
func TestSessionsPage(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	ctx := context.Background()
	msgs := b.insert(t, 3, acmeParty)
	const key = "writer|acme→local"
	for _, m := range msgs {
		if _, err := b.store.Redispatch(ctx, m.ID, []persistence.InstanceName{writerInst},
			map[persistence.InstanceName]persistence.DeliverySession{writerInst: {Key: key}}, nil, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	claims, err := b.store.ClaimDeliveries(ctx, writerInst, 10, time.Minute, time.Now())
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim = %d, %v", len(claims), err)
	}
	head := claims[0].Delivery
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: head.ID,
		Token: head.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "HTTP 422 from the ERP"}}); err != nil {
		t.Fatal(err)
	}

	page := c.get(t, "/ui/sessions")
	skip := fmt.Sprintf("/ui/sessions/deliveries/%d/skip", head.ID)
	for _, want := range []string{key, fmt.Sprintf("Delivery %d of message %d", head.ID, head.MessageID), "HTTP 422 from the ERP",
		`<td class="numeric">2</td>`, `href="` + skip + `"`, fmt.Sprintf(`href="/ui/sessions/deliveries/%d/resubmit"`, head.ID)} {
		if !strings.Contains(page.body, want) {
			t.Fatalf("sessions page lacks %q:\n%s", want, page.body)
		}
	}
	if home := c.get(t, "/ui/"); !strings.Contains(home.body, `href="/ui/sessions"`) || !strings.Contains(home.body, "1 session, 2 parked deliveries") {
		t.Fatalf("dashboard does not count the blocked session:\n%s", home.body)
	}
	detail := c.get(t, fmt.Sprintf("/ui/messages/%d", msgs[2].ID))
	if !strings.Contains(detail.body, key) || !strings.Contains(detail.body, "2 ahead in its session") || !strings.Contains(detail.body, ">parked<") {
		t.Fatalf("message page lacks the session and place:\n%s", detail.body)
	}

	confirm := c.get(t, skip)
	if confirm.status != http.StatusOK || !strings.Contains(confirm.body, `action="`+skip+`"`) || !strings.Contains(confirm.body, "2 parked deliveries") {
		t.Fatalf("confirmation = %d:\n%s", confirm.status, confirm.body)
	}
	token := match(t, csrfRE, confirm.body)
	if r := c.post(t, skip, url.Values{"confirm": {"yes"}}); r.status != http.StatusForbidden {
		t.Fatalf("skip without CSRF = %d, want 403", r.status)
	}
	if r := c.post(t, skip, url.Values{session.CSRFField: {token}}); r.status != http.StatusSeeOther || r.header.Get("Location") != skip {
		t.Fatalf("unconfirmed skip = %d to %q", r.status, r.header.Get("Location"))
	}
	for _, path := range []string{"/ui/sessions/deliveries/999999/skip", fmt.Sprintf("/ui/sessions/deliveries/%d/explode", head.ID)} {
		if r := c.get(t, path); r.status != http.StatusNotFound {
			t.Fatalf("GET %s = %d, want 404", path, r.status)
		}
	}
	if r := c.post(t, skip, url.Values{session.CSRFField: {token}, "confirm": {"yes"}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/sessions" {
		t.Fatalf("skip = %d to %q\n%s", r.status, r.header.Get("Location"), r.body)
	}
	if d, _ := b.store.GetDelivery(ctx, head.ID); d.State != persistence.DeliverySkipped {
		t.Fatalf("after skip the delivery is %s", d.State)
	}
	page = c.get(t, "/ui/sessions")
	if !strings.Contains(page.body, "No session is blocked.") || !strings.Contains(page.body, "parked deliveries are released") {
		t.Fatalf("after skip:\n%s", page.body)
	}
	// Skipping again is refused with a flash, not an error page.
	if r := c.post(t, skip, url.Values{session.CSRFField: {token}, "confirm": {"yes"}}); r.status != http.StatusSeeOther {
		t.Fatalf("second skip = %d", r.status)
	}
	if page := c.get(t, "/ui/sessions"); !strings.Contains(page.body, "Refused: the delivery is not in a state") {
		t.Fatalf("second skip shows no refusal:\n%s", page.body)
	}
}
