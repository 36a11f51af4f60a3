package persistence

import (
	"fmt"
	"time"
)

// DeliverySession is the ordered session a new delivery joins. Note, when set, is said
// in the delivery's history (a message lacking the route's session_by value falls into
// the default session of its parties).
type DeliverySession struct {
	Key  string
	Note string
}

// SessionFor is the one rule that keys a delivery's session: on an ordered route, the
// target instance with either the value of the route's session_by metadata entry or,
// by default or when the message lacks that value, the message's two parties. Sessions
// never span targets: every key starts with the target. An unordered route has none.
func SessionFor(r Route, m Message) (DeliverySession, bool) {
	if !r.Ordered {
		return DeliverySession{}, false
	}
	if r.SessionBy != "" {
		if v := m.Metadata[r.SessionBy]; v != "" {
			return DeliverySession{Key: fmt.Sprintf("%s|%s=%s", r.Target, r.SessionBy, v)}, true
		}
		return DeliverySession{
			Key:  DefaultSessionKey(r.Target, m.From, m.To),
			Note: fmt.Sprintf("no metadata %q: default session of %s→%s", r.SessionBy, m.From, m.To),
		}, true
	}
	return DeliverySession{Key: DefaultSessionKey(r.Target, m.From, m.To)}, true
}

// DefaultSessionKey keys the session of a target and two parties.
func DefaultSessionKey(target InstanceName, from, to PartyName) string {
	return fmt.Sprintf("%s|%s→%s", target, from, to)
}

// BlockedSession is an ordered session stopped by a failed delivery: the deliveries
// dispatched after it wait parked until an operator resubmits or skips it.
type BlockedSession struct {
	Key    string       `json:"key"`
	Target InstanceName `json:"target"`
	From   PartyName    `json:"from"`
	To     PartyName    `json:"to"`
	// BlockedBy is the blocking delivery, with its message, state and last error.
	BlockedBy       int64         `json:"blocking_delivery_id"`
	BlockingMessage int64         `json:"blocking_message_id"`
	BlockingState   DeliveryState `json:"blocking_state"`
	Error           string        `json:"error"`
	BlockedAt       time.Time     `json:"blocked_at"`
	Parked          int           `json:"parked"`
	// OldestParkedAt is when the longest-waiting parked delivery was parked; nil when
	// none is.
	OldestParkedAt *time.Time `json:"oldest_parked_at"`
}

// SessionFilter selects blocked sessions; zero fields do not filter. Party matches
// either side.
type SessionFilter struct {
	Target InstanceName
	Party  PartyName
	ListOptions
}

// DeliveryActionResult is the fate of one delivery of a bulk operator action: the
// delivery as it now is, or why the action did not apply to it (ErrNotFound,
// ErrConflict with the state, wrapped).
type DeliveryActionResult struct {
	ID       int64    `json:"id"`
	Delivery Delivery `json:"delivery"`
	Err      error    `json:"-"`
}

// CheckSessionBy validates a route's session_by: a metadata name, and only on an ordered
// route. The error is a FieldError on session_by.
func CheckSessionBy(r Route) error {
	if r.SessionBy == "" {
		return nil
	}
	if !r.Ordered {
		return &FieldError{Field: "session_by", Message: "applies only to an ordered route"}
	}
	if n, err := ParseMetadataName(r.SessionBy); err != nil || n != r.SessionBy {
		return &FieldError{Field: "session_by", Message: fmt.Sprintf("invalid metadata name %q: want 1 to %d of a-z, 0-9, _ and -", r.SessionBy, MaxMetadataName)}
	}
	return nil
}
