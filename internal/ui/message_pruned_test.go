package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence/db"
)

func TestMessageDetailSaysWhatRetentionPruned(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	m := b.insert(t, 1, acmeParty)[0] // no target: settled at once
	path := fmt.Sprintf("/ui/messages/%d", m.ID)
	if r := c.get(t, path); strings.Contains(r.body, "pruned by retention") {
		t.Fatalf("a fresh message says it was pruned:\n%s", r.body)
	}
	ctx := context.Background()
	later := time.Now().Add(48 * time.Hour)
	if _, n, _, err := b.store.PrunePayloads(ctx, later, 1, db.PruneCursor{}, 10); err != nil || n != 1 {
		t.Fatalf("prune payloads: %d, %v", n, err)
	}
	if n, err := b.store.PruneHistory(ctx, later, 1, 100); err != nil || n == 0 {
		t.Fatalf("prune history: %d, %v", n, err)
	}
	r := c.get(t, path)
	if r.status != http.StatusOK {
		t.Fatalf("GET detail = %d", r.status)
	}
	for _, want := range []string{`id="payloads-pruned">Payloads pruned by retention`, `id="history-pruned">History before`, "No payloads are stored."} {
		if !strings.Contains(r.body, want) {
			t.Errorf("detail lacks %q:\n%s", want, r.body)
		}
	}
}
