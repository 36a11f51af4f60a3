package records

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
)

// A notifier sends alerts, not messages: no route and no message sent by hand may name
// it as the target.
func TestNotifierIsNoMessageTarget(t *testing.T) {
	s := dbtest.SQLite(t)
	seed(t, s)
	ctx := context.Background()
	if _, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "ops", Type: persistence.PluginNotificationWebhook, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	_, err := CreateRoute(ctx, s, RouteInput{Source: "outbox", From: "*", To: "*", Target: "ops"})
	if got := fieldsOf(err); fmt.Sprint(got) != "[target]" || !strings.Contains(err.Error(), "notifier") {
		t.Fatalf("route to a notifier: %v", err)
	}
}
