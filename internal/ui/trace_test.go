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
)

// The Trace page, reached from the message page's Trace link, heads with the final
// statuses and draws a timeline per message and per delivery with each transition's
// reason and actor; a bad search answers 400 naming the field.
func TestTracePage(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	ctx := context.Background()
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	claims, err := b.store.ClaimDeliveries(ctx, writerInst, 1, time.Minute, time.Now())
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim = %d, %v", len(claims), err)
	}
	d := claims[0].Delivery
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID, Token: d.ClaimToken,
		Kind: persistence.OutcomeFailed, Reason: "HTTP 422 from the ERP"}}); err != nil {
		t.Fatal(err)
	}

	link := "/ui/trace?origin_event_id=" + url.QueryEscape(m.OriginEventID)
	if page := c.get(t, fmt.Sprintf("/ui/messages/%d", m.ID)); !strings.Contains(page.body, `href="`+strings.ReplaceAll(link, "&", "&amp;")+`"`) {
		t.Fatalf("the message page does not link to %s:\n%s", link, page.body)
	}
	page := c.get(t, link)
	if page.status != http.StatusOK {
		t.Fatalf("trace = %d", page.status)
	}
	final := strings.Index(page.body, "Final statuses")
	timeline := strings.Index(page.body, fmt.Sprintf("Delivery %d to %s", d.ID, writerInst))
	if final < 0 || timeline < final {
		t.Fatalf("the final statuses do not head the timelines:\n%s", page.body)
	}
	for _, want := range []string{`<span class="badge badge-error">error</span>`, `<span class="badge badge-danger">failed</span>`,
		"queued → delivering", "delivering → failed", "HTTP 422 from the ERP", "by system", "timeline-received", "timeline-delivery_changed"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("trace page lacks %q", want)
		}
	}

	for _, tc := range []struct{ query, field string }{
		{"origin_event_id=&correlation_id=", "origin_event_id"},
		{"origin_event_id=a&correlation_id=b", "correlation_id"},
		{"correlation_id=" + strings.Repeat("x", 256), "correlation_id"},
	} {
		r := c.get(t, "/ui/trace?"+tc.query)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `id="filter-`+strings.ReplaceAll(tc.field, "_", "-")+`-error"`) {
			t.Errorf("%s = %d, want 400 naming %s:\n%s", tc.query, r.status, tc.field, r.body)
		}
	}
	if r := c.get(t, "/ui/trace"); r.status != http.StatusOK || !strings.Contains(r.body, `role="search"`) || strings.Contains(r.body, "No message carries") {
		t.Errorf("bare trace page = %d:\n%s", r.status, r.body)
	}
	if r := c.get(t, "/ui/trace?correlation_id=nothing"); !strings.Contains(r.body, "No message carries that id") {
		t.Errorf("an empty trace does not say so:\n%s", r.body)
	}
}
