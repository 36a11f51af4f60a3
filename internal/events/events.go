// Package events turns the message history into events: each append-only history row is
// one event whose id is the row's id, with a type from one canonical list, the message's
// parties and correlation ids, and never payload content, file names, reasons, headers or
// secrets. The event webhooks (internal/eventhook) and the REST event stream read them.
package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// Type names what an event reports.
type Type string

// The event types. A history line whose kind or state is not listed here (a kind added
// later) arrives as message.<kind> or delivery.<state> and matches message.* or
// delivery.* only.
const (
	MessageReceived          Type = "message.received"
	MessageDispatched        Type = "message.dispatched"
	MessageStatusChanged     Type = "message.status_changed"
	MessageDelivered         Type = "message.delivered"
	MessageFailed            Type = "message.failed"
	MessageRefused           Type = "message.refused"
	MessageNotRouted         Type = "message.not_routed"
	MessageStalled           Type = "message.stalled"
	MessageHeld              Type = "message.held"
	MessageSkipped           Type = "message.skipped"
	MessageReceiptReceived   Type = "message.receipt_received"
	MessageReceiptRefused    Type = "message.receipt_refused"
	MessageDuplicateReceived Type = "message.duplicate_received"
	MessageRedispatch        Type = "message.redispatch_requested"
	MessageMDNUndeliverable  Type = "message.mdn_undeliverable"
	DeliveryQueued           Type = "delivery.queued"
	DeliveryDelivering       Type = "delivery.delivering"
	DeliveryRetrying         Type = "delivery.retrying"
	DeliveryAwaitingAck      Type = "delivery.awaiting_ack"
	DeliveryDelivered        Type = "delivery.delivered"
	DeliveryFailed           Type = "delivery.failed"
	DeliveryStalled          Type = "delivery.stalled"
	DeliveryParked           Type = "delivery.parked"
	DeliverySkipped          Type = "delivery.skipped"
	DeliveryPaused           Type = "delivery.paused"
	DeliveryRedeliver        Type = "delivery.redeliver_requested"
	DeliveryResubmit         Type = "delivery.resubmit_requested"
	DeliverySkip             Type = "delivery.skip_requested"
	// SessionBlocked selects the delivery.failed events of ordered sessions: the failure
	// blocks its session in the same transaction.
	SessionBlocked Type = "session.blocked"
	// Test is the event of a subscription's test button; it is never in the history.
	Test Type = "webhook.test"
)

// Types is the canonical list, in the order the documentation gives them.
var Types = []Type{
	MessageReceived, MessageDispatched, MessageStatusChanged, MessageDelivered, MessageFailed, MessageRefused,
	MessageNotRouted, MessageStalled, MessageHeld, MessageSkipped, MessageReceiptReceived, MessageReceiptRefused,
	MessageDuplicateReceived, MessageRedispatch, MessageMDNUndeliverable,
	DeliveryQueued, DeliveryDelivering, DeliveryRetrying, DeliveryAwaitingAck, DeliveryDelivered, DeliveryFailed,
	DeliveryStalled, DeliveryParked, DeliverySkipped, DeliveryPaused, DeliveryRedeliver, DeliveryResubmit, DeliverySkip,
	SessionBlocked,
}

// Wildcards select every type of a group, or every event.
const (
	AllMessages   Pattern = "message.*"
	AllDeliveries Pattern = "delivery.*"
	All           Pattern = "*"
)

// Pattern selects events: a type of Types or a wildcard.
type Pattern string

// ParsePattern parses one event type or wildcard.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern(s)
	if p == AllMessages || p == AllDeliveries || p == All || slices.Contains(Types, Type(s)) {
		return p, nil
	}
	return "", fmt.Errorf("unknown event type %q: want one of %s, message.*, delivery.* or *", s, typeNames())
}

// ParsePatterns parses a comma-separated list (a query parameter); empty selects all.
func ParsePatterns(s string) ([]Pattern, error) {
	var out []Pattern
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		p, err := ParsePattern(part)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (p *Pattern) UnmarshalText(b []byte) error {
	v, err := ParsePattern(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

func typeNames() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// Matches reports whether the pattern selects e.
func (p Pattern) Matches(e Event) bool {
	switch p {
	case All:
		return true
	case AllMessages, AllDeliveries:
		return strings.HasPrefix(string(e.Type), strings.TrimSuffix(string(p), "*"))
	case Pattern(SessionBlocked):
		return e.Data.SessionBlocked
	}
	return Type(p) == e.Type
}

// Selects reports whether any of patterns selects e (none selects every event) and the
// event concerns party (empty: any party).
func Selects(patterns []Pattern, party persistence.PartyName, e Event) bool {
	if party != "" && e.Data.From != party && e.Data.To != party {
		return false
	}
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if p.Matches(e) {
			return true
		}
	}
	return false
}

// Event is one event as it is sent: the body of a webhook and the data of a stream event.
type Event struct {
	Type      Type      `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is what an event says about its message and delivery.
type Data struct {
	// EventID is the history row's id: the stream's event id, and the webhook-id is
	// made of it.
	EventID   int64                    `json:"event_id"`
	MessageID int64                    `json:"message_id"`
	Delivery  *int64                   `json:"delivery_id,omitempty"`
	Target    persistence.InstanceName `json:"target,omitempty"`
	Source    persistence.InstanceName `json:"source"`
	From      persistence.PartyName    `json:"from"`
	To        persistence.PartyName    `json:"to"`
	FromState string                   `json:"from_state,omitempty"`
	ToState   string                   `json:"to_state,omitempty"`
	Actor     string                   `json:"actor"`
	// SessionBlocked marks a failure that blocked its ordered session.
	SessionBlocked bool   `json:"session_blocked,omitempty"`
	CorrelationID  string `json:"correlation_id"`
	OriginEventID  string `json:"origin_event_id"`
}

// Body is the event as JSON.
func (e Event) Body() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("encode event %d: %v", e.Data.EventID, err)) // plain values only
	}
	return b
}

// Row is a history row with what an event says of its message and delivery.
type Row struct {
	ID            int64
	MessageID     int64
	DeliveryID    *int64
	At            time.Time
	Kind          persistence.HistoryKind
	FromState     string
	ToState       string
	Actor         string
	Target        string
	SessionKey    string
	From, To      string
	Source        string
	CorrelationID string
	OriginEventID string
}

// messageStatusTypes names the status changes that have a type of their own; the others
// are message.status_changed.
var messageStatusTypes = map[persistence.MessageStatus]Type{
	persistence.StatusDelivered: MessageDelivered,
	persistence.StatusError:     MessageFailed,
	persistence.StatusRefused:   MessageRefused,
	persistence.StatusNotRouted: MessageNotRouted,
	persistence.StatusStalled:   MessageStalled,
	persistence.StatusHeld:      MessageHeld,
	persistence.StatusSkipped:   MessageSkipped,
}

// FromRow is the event of one history row.
func FromRow(r Row) Event {
	e := Event{Timestamp: r.At.UTC(), Data: Data{
		EventID: r.ID, MessageID: r.MessageID, Delivery: r.DeliveryID, Target: persistence.InstanceName(r.Target),
		Source: persistence.InstanceName(r.Source), From: persistence.PartyName(r.From), To: persistence.PartyName(r.To),
		FromState: r.FromState, ToState: r.ToState, Actor: r.Actor,
		CorrelationID: r.CorrelationID, OriginEventID: r.OriginEventID,
	}}
	switch r.Kind {
	case persistence.HistoryStatusChanged:
		e.Type = MessageStatusChanged
		if t, ok := messageStatusTypes[persistence.MessageStatus(r.ToState)]; ok {
			e.Type = t
		}
	case persistence.HistoryDeliveryChanged:
		e.Type = Type("delivery." + r.ToState)
		e.Data.SessionBlocked = r.ToState == string(persistence.DeliveryFailed) && r.SessionKey != ""
	case persistence.HistoryRedeliverRequested, persistence.HistoryResubmitRequested, persistence.HistorySkipRequested:
		e.Type = Type("delivery." + string(r.Kind))
	default:
		e.Type = Type("message." + string(r.Kind))
	}
	return e
}
