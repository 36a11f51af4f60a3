package ui

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence/db"
)

// TestServicesPageListsProcesses: the services page lists each process with its host,
// roles, version and last heartbeat, and marks the ones that missed their heartbeats.
func TestServicesPageListsProcesses(t *testing.T) {
	cb := setupConfigPages(t)
	now := cb.clock.now
	for _, p := range []db.Process{
		{ID: "a1", Host: "work1", Roles: []string{"plugin:http-poster"}, Version: "1.4.0", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-time.Second)},
		{ID: "b2", Host: "work2", Roles: []string{"sweeper"}, Version: "1.4.0", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-5 * time.Minute)},
	} {
		if err := cb.store.RecordHeartbeat(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	table := cb.get(t, "/ui/services/table", http.StatusOK)
	row := func(id string) string {
		i := strings.Index(table, `data-process="`+id+`"`)
		if i < 0 {
			t.Fatalf("no row for process %s:\n%s", id, table)
		}
		return table[i : i+strings.Index(table[i:], "</tr>")]
	}
	fresh, stale := row("a1"), row("b2")
	for _, want := range []string{"work1", "plugin:http-poster", "1.4.0", now.Add(-time.Second).Format(time.RFC3339)} {
		if !strings.Contains(fresh, want) {
			t.Errorf("row of a1 lacks %q: %s", want, fresh)
		}
	}
	if strings.Contains(fresh, `data-state="stale"`) {
		t.Errorf("a process that just beat is marked stale: %s", fresh)
	}
	if !strings.Contains(stale, `data-state="stale"`) || !strings.Contains(stale, "sweeper") {
		t.Errorf("a process silent for five minutes is not marked stale: %s", stale)
	}
}
