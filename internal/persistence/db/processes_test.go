package db_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// TestProcesses: a heartbeat inserts its process once and then updates it; the list
// shows the latest heartbeat first; a bad id is refused.
func TestProcesses(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		beats := []db.Process{
			{ID: "aa", Host: "work1", Roles: []string{"plugin:http-poster"}, Version: "1.0", StartedAt: t0, HeartbeatAt: t0},
			{ID: "bb", Host: "work1", Roles: []string{"sweeper"}, Version: "1.0", StartedAt: t0, HeartbeatAt: t0.Add(time.Second)},
			{ID: "aa", Host: "work1", Roles: []string{"plugin:http-poster"}, Version: "1.0", StartedAt: t0, HeartbeatAt: t0.Add(2 * time.Second)},
		}
		for _, p := range beats {
			if err := s.RecordHeartbeat(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.ListProcesses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != "aa" || !got[0].HeartbeatAt.Equal(t0.Add(2*time.Second)) ||
			!slices.Equal(got[0].Roles, []string{"plugin:http-poster"}) || got[1].ID != "bb" || got[1].Host != "work1" {
			t.Fatalf("processes = %+v", got)
		}
		if err := s.RecordHeartbeat(ctx, db.Process{ID: "NOT-HEX", StartedAt: t0, HeartbeatAt: t0}); err == nil {
			t.Error("a heartbeat with a bad id was stored")
		}
	})
}
