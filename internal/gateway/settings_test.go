package gateway

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"wharf/internal/persistence/db/dbtest"
)

// While the database does not answer, the settings read last hold rather than the
// defaults (the health check keeps its interval through an outage).
func TestSettingsOutliveAFailedRead(t *testing.T) {
	ctx := context.Background()
	s := dbtest.SQLite(t)
	if err := s.PutSetting(ctx, "health_check_interval", "2s"); err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Store: s, log: slog.New(slog.DiscardHandler)}
	if got := g.settings(ctx).HealthCheckInterval; got != 2*time.Second {
		t.Fatalf("interval %v, want the stored 2s", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	g.settingsChanged()
	if got := g.settings(ctx).HealthCheckInterval; got != 2*time.Second {
		t.Fatalf("interval after a failed read %v, want the 2s read last", got)
	}
}
