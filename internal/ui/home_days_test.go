package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// The dashboard's days older than the live window come from the daily counts, which the
// pruning job rolls up before it prunes anything.
func TestDashboardDaysReadTheDailyCounts(t *testing.T) {
	b, _ := setupLive(t)
	c := b.signedIn(t)
	ctx := context.Background()
	now := b.clock.Now() // months before the store's own clock: older than its live window
	for _, age := range []time.Duration{20 * 24 * time.Hour, 24 * time.Hour, 24 * time.Hour} {
		id, err := b.store.AllocateMessageIDs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		nm := persistence.NewMessage{Message: persistence.Message{ID: id, From: acmeParty, To: localParty, Source: pollerInst,
			OriginalFileName: "order.edi", Size: 10, SHA256: strings.Repeat("0", 64), CreatedAt: now.Add(-age),
			CorrelationID: fmt.Sprint("c", id), OriginEventID: fmt.Sprint("e", id)}, Dispatch: true}
		if _, err := b.store.InsertMessages(ctx, []persistence.NewMessage{nm}); err != nil {
			t.Fatal(err)
		}
	}
	if body := c.get(t, "/ui/").body; !strings.Contains(body, "No messages in the last 30 days.") {
		t.Errorf("days not rolled up yet are shown:\n%s", body)
	}
	if _, err := b.store.RollupDailyCounts(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	body := c.get(t, "/ui/").body
	for _, want := range []string{
		// day, delivered, problems (not routed), all, bytes
		`<tr><th scope="row">2026-02-28</th><td class="numeric">0</td><td class="numeric">2</td><td class="numeric">2</td><td class="numeric">20</td></tr>`,
		`<tr><th scope="row">2026-02-09</th><td class="numeric">0</td><td class="numeric">1</td><td class="numeric">1</td><td class="numeric">10</td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	if i, j := strings.Index(body, "2026-02-28"), strings.Index(body, "2026-02-09"); i > j {
		t.Errorf("days are not newest first")
	}
}
