package events

import (
	"fmt"
	"slices"
	"time"

	"wharf/internal/persistence"
)

// The event-webhook module's records as the rest of a process shows them (the web UI
// reads them through an interface of its own; the core imports no module).

// Subscription is an event-webhook subscription: its record's plain fields (never the URL
// or a secret) and the health of its endpoint.
type Subscription struct {
	Name    persistence.InstanceName `json:"name"`
	Enabled bool                     `json:"enabled"`
	Events  []Pattern                `json:"events"`
	Party   persistence.PartyName    `json:"party,omitempty"`
	Health  WebhookHealth            `json:"health"`
}

// WebhookHealth is where a subscription's endpoint stands: failing since the first
// failure after its last success, disabled once that lasted its disable_after.
type WebhookHealth struct {
	FailingSince  *time.Time `json:"failing_since"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	DisabledAt    *time.Time `json:"disabled_at"`
}

// WebhookState is where a row of a subscription's delivery log stands.
type WebhookState string

// The states of a row.
const (
	WebhookQueued     WebhookState = "queued"
	WebhookDelivering WebhookState = "delivering"
	WebhookRetrying   WebhookState = "retrying"
	WebhookDelivered  WebhookState = "delivered"
	WebhookFailed     WebhookState = "failed"
)

// WebhookStates lists the states.
var WebhookStates = []WebhookState{WebhookQueued, WebhookDelivering, WebhookRetrying, WebhookDelivered, WebhookFailed}

// ParseWebhookState parses a state name.
func ParseWebhookState(s string) (WebhookState, error) {
	if slices.Contains(WebhookStates, WebhookState(s)) {
		return WebhookState(s), nil
	}
	return "", fmt.Errorf("invalid state %q: want queued, delivering, retrying, delivered or failed", s)
}

// WebhookDelivery is one row of a subscription's delivery log: one event (or test) and
// what came of sending it.
type WebhookDelivery struct {
	ID            int64        `json:"id"`
	EventID       *int64       `json:"event_id"`
	Type          string       `json:"type"`
	MessageID     *int64       `json:"message_id"`
	State         WebhookState `json:"state"`
	Attempts      int          `json:"attempts"`
	NextAttemptAt *time.Time   `json:"next_attempt_at"`
	LastError     string       `json:"last_error"`
	CreatedAt     time.Time    `json:"created_at"`
	UpdatedAt     time.Time    `json:"updated_at"`
}
