package notification

import (
	"errors"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// TestConfigRefusesAwaitCompletion: a notification is sent, not handed off, so the
// option every target has is refused for a notifier rather than silently ignored.
func TestConfigRefusesAwaitCompletion(t *testing.T) {
	c := NewConfig()
	c.URL = "https://hooks.example/alerts"
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	c.AwaitCompletion = delivery.Duration(time.Hour)
	var fe *persistence.FieldError
	if err := c.Validate(); !errors.As(err, &fe) || fe.Field != "await_completion" {
		t.Fatalf("await_completion on a notifier: %v, want a FieldError for await_completion", err)
	}
}
