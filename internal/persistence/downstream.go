package persistence

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// HistoryDownstreamStatus is a line of what the receiving side said about a delivery:
// a partner's MDN or an in-house system's status callback. Its to_state is the status,
// its reason the reporter's reason, its actor the reporter (DownstreamActorMDN,
// DownstreamActorCallback), and reported_at the reporter's own time.
const HistoryDownstreamStatus HistoryKind = "downstream_status"

// Downstream statuses the gateway itself gives meaning to. A status callback may name any
// other status (see ParseDownstreamStatus); those are intermediate.
const (
	DownstreamReceived             = "received"
	DownstreamProcessed            = "processed"
	DownstreamProcessedWithWarning = "processed_with_warning"
	DownstreamRejected             = "rejected"
	DownstreamFailed               = "failed"
)

// downstreamTerminal are the statuses after which the receiving side has nothing more
// to say: the delivery succeeded or failed there.
var downstreamTerminal = []string{DownstreamProcessed, DownstreamProcessedWithWarning, DownstreamRejected, DownstreamFailed}

// DownstreamActorMDN is the reporter of a downstream line taken from an AS2 MDN.
const DownstreamActorMDN = "mdn"

// DownstreamActorCallback is the reporter of a status callback to target.
func DownstreamActorCallback(target InstanceName) string { return "callback:" + string(target) }

// MaxDownstreamStatusBytes bounds a status name.
const MaxDownstreamStatusBytes = 64

// ParseDownstreamStatus accepts a status a reporter names: 1 to MaxDownstreamStatusBytes
// of lower-case letters, digits, '_' and '-', so it reads back the same in history, REST
// and the UI.
func ParseDownstreamStatus(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("is empty")
	case len(s) > MaxDownstreamStatusBytes:
		return "", fmt.Errorf("is longer than %d bytes", MaxDownstreamStatusBytes)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return "", fmt.Errorf("has %q at byte %d: use lower-case letters, digits, '_' and '-'", c, i+1)
		}
	}
	return s, nil
}

// DownstreamTerminal reports whether status ends what the receiving side has to say.
func DownstreamTerminal(status string) bool { return slices.Contains(downstreamTerminal, status) }

// DownstreamFailure reports whether status says the receiving side refused or failed the
// document.
func DownstreamFailure(status string) bool {
	return status == DownstreamRejected || status == DownstreamFailed
}

// Downstream is a delivery's downstream status: the line DownstreamStatus picked.
type Downstream struct {
	Status     string    `json:"status"`
	Reason     string    `json:"reason,omitempty"`
	Reporter   string    `json:"reporter"`
	ReportedAt time.Time `json:"reported_at"`
	// At is when the gateway recorded the line.
	At time.Time `json:"at"`
	// Final says the status is terminal: no later report changes it.
	Final bool `json:"final"`
}

// DownstreamStatus folds one delivery's history lines (in arrival order, as stored) into
// its downstream status, the only code that decides it; ok is false when no line is a
// downstream status. Reports may arrive out of order, so arrival order alone does not
// decide: the first terminal status to arrive wins over everything (a receipt never
// downgrades, and the first failure stands), and among intermediate statuses the one
// with the latest reporter time wins, a later arrival breaking a tie.
func DownstreamStatus(lines []HistoryEntry) (Downstream, bool) {
	var best *HistoryEntry
	for i := range lines {
		h := &lines[i]
		if h.Kind != HistoryDownstreamStatus {
			continue
		}
		switch {
		case best == nil:
			best = h
		case DownstreamTerminal(best.ToState):
			// The first terminal status stands.
		case DownstreamTerminal(h.ToState):
			best = h
		case !reportedAt(*h).Before(reportedAt(*best)):
			best = h
		}
	}
	if best == nil {
		return Downstream{}, false
	}
	return Downstream{Status: best.ToState, Reason: best.Reason, Reporter: best.Actor,
		ReportedAt: reportedAt(*best), At: best.At, Final: DownstreamTerminal(best.ToState)}, true
}

// DownstreamByDelivery folds a message's history into the downstream status of each of
// its deliveries that has one.
func DownstreamByDelivery(lines []HistoryEntry) map[int64]Downstream {
	per := make(map[int64][]HistoryEntry)
	for _, h := range lines {
		if h.Kind == HistoryDownstreamStatus && h.DeliveryID != nil {
			per[*h.DeliveryID] = append(per[*h.DeliveryID], h)
		}
	}
	out := make(map[int64]Downstream, len(per))
	for id, ls := range per {
		if d, ok := DownstreamStatus(ls); ok {
			out[id] = d
		}
	}
	return out
}

// AttachDownstream sets the Downstream of each of a message's deliveries from the
// message's history.
func AttachDownstream(ds []Delivery, lines []HistoryEntry) {
	by := DownstreamByDelivery(lines)
	for i := range ds {
		if d, ok := by[ds[i].ID]; ok {
			ds[i].Downstream = &d
		}
	}
}

// reportedAt is the reporter's time of a line, or ours when it gave none.
func reportedAt(h HistoryEntry) time.Time {
	if h.ReportedAt != nil {
		return *h.ReportedAt
	}
	return h.At
}

// DownstreamReport is one downstream status to record for a delivery.
type DownstreamReport struct {
	MessageID  int64
	DeliveryID int64
	Status     string
	Reason     string
	// Reporter is DownstreamActorMDN or DownstreamActorCallback's.
	Reporter   string
	ReportedAt time.Time
	// Pause, when not empty and the report fails the delivery, pauses the message's
	// partner with this reason in the same transaction (PartnerPause); it is not stored
	// with the line.
	Pause string
}

// StatusCallback is one status callback an in-house system sent to a target instance,
// verified and decoded, waiting to be applied. It names its delivery by DeliveryID, or by
// MessageID (the message's delivery to Target), or by ExternalRef (the reference the
// target's handoff recorded): exactly one of them is set.
type StatusCallback struct {
	Target      InstanceName `json:"target"`
	WebhookID   string       `json:"webhook_id"`
	DeliveryID  int64        `json:"delivery_id,omitempty"`
	MessageID   int64        `json:"message_id,omitempty"`
	ExternalRef string       `json:"external_ref,omitempty"`
	Status      string       `json:"status"`
	Reason      string       `json:"reason,omitempty"`
	Detail      string       `json:"detail,omitempty"`
	ReportedAt  time.Time    `json:"reported_at"`
}

// CallbackOutcome is what applying one status callback came to.
type CallbackOutcome string

const (
	// CallbackApplied wrote the callback's downstream line (and any settlement).
	CallbackApplied CallbackOutcome = "applied"
	// CallbackDuplicate is a webhook-id the target had already seen: nothing written.
	CallbackDuplicate CallbackOutcome = "duplicate"
	// CallbackUnmatched names no delivery of the target: only its webhook-id is kept.
	CallbackUnmatched CallbackOutcome = "unmatched"
)

// CallbackSecret is one signing secret of a target instance's status callbacks; the
// secret itself is sealed and never leaves the store but to the verifier.
type CallbackSecret struct {
	ID         int64        `json:"id"`
	Target     InstanceName `json:"target"`
	CreatedAt  time.Time    `json:"created_at"`
	LastUsedAt *time.Time   `json:"last_used_at"`
	RevokedAt  *time.Time   `json:"revoked_at"`
	Sealed     []byte       `json:"-"`
}

// MaxWebhookIDBytes bounds a status callback's webhook-id.
const MaxWebhookIDBytes = MaxExternalRefBytes

// CheckWebhookID accepts a status callback's webhook-id by the rule of an external
// reference (printable ASCII without spaces, at most MaxWebhookIDBytes), for the same
// reason: it is kept, logged and shown as sent.
func CheckWebhookID(s string) error { return CheckExternalRef(s) }
