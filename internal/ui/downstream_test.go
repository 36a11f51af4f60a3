package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// TestMessageDetailShowsDownstream: each delivery shows what the receiving side last
// said, as the fold of its history picks it, and the history shows the reporter's time.
func TestMessageDetailShowsDownstream(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	ctx := context.Background()
	m, d := b.claimOne(t, webhookInst)
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID, Token: d.ClaimToken,
		Kind: persistence.OutcomeAwaitingAck, AckDeadline: time.Now().Add(time.Hour), At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	// The rejection arrives first, the earlier "received" after it: the rejection stands.
	if _, err := b.store.ApplyCallbacks(ctx, []persistence.StatusCallback{
		{Target: webhookInst, WebhookID: "w2", DeliveryID: d.ID, Status: "rejected", Reason: "unknown article 0815", ReportedAt: at},
		{Target: webhookInst, WebhookID: "w1", DeliveryID: d.ID, Status: "received", ReportedAt: at.Add(-time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}
	r := c.get(t, fmt.Sprintf("/ui/messages/%d", m.ID))
	for _, want := range []string{
		`<span class="muted">downstream</span> <span class="badge badge-danger">rejected</span>`,
		`by callback:` + string(webhookInst) + `, <time datetime="2031-05-06T07:08:09Z">`,
		`(reported <time datetime="2031-05-06T07:07:09Z">`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("detail lacks %q:\n%s", want, r.body)
		}
	}
}

// claimOne inserts a message to target and claims its delivery.
func (b *messagesBundle) claimOne(t *testing.T, target persistence.InstanceName) (persistence.Message, persistence.Delivery) {
	t.Helper()
	m := b.insert(t, 1, acmeParty, target)[0]
	claims, err := b.store.ClaimDeliveries(context.Background(), target, 10, time.Minute, time.Now())
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim = %d, %v", len(claims), err)
	}
	return m, claims[0].Delivery
}
