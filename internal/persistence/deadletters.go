package persistence

import (
	"slices"
	"time"
)

// DeadLetter is a delivery that waits for an operator: failed, or parked behind a
// blocked ordered session, with what an operator needs to pick it out.
type DeadLetter struct {
	Delivery
	From     PartyName `json:"from"`
	To       PartyName `json:"to"`
	FileName string    `json:"original_file_name"`
	// AgeSeconds is how long ago the delivery was dispatched, as of the list.
	AgeSeconds int64 `json:"age_seconds"`
}

// DeadLetterStates are the delivery states the dead letters list.
var DeadLetterStates = []DeliveryState{DeliveryFailed, DeliveryParked}

// DeadLetterFilter selects dead letters; zero fields do not filter. Party matches either
// side; the times bound when the delivery was dispatched.
type DeadLetterFilter struct {
	State   DeliveryState // failed or parked
	Target  InstanceName
	Party   PartyName
	Session string
	// ErrorClass keeps the deliveries whose last failure is of this class (retry.Class).
	ErrorClass    string
	CreatedBefore time.Time // older than
	CreatedAfter  time.Time // newer than (at or after)
	// IDs, when not empty, keeps only these deliveries (at most MaxBulkDeliveries).
	IDs []int64
	ListOptions
}

// DeliveryAction is an operator's action on many deliveries at once.
type DeliveryAction string

const (
	// ActionRedeliver sends a failed delivery again (DESIGN's redeliver).
	ActionRedeliver DeliveryAction = "redeliver"
	// ActionResubmit attempts a failed or stalled delivery again; on a session's blocking
	// delivery the session unblocks once it is delivered.
	ActionResubmit DeliveryAction = "resubmit"
	// ActionSkip marks a failed or parked delivery skipped.
	ActionSkip DeliveryAction = "skip"
)

// AllDeliveryActions lists the bulk actions.
var AllDeliveryActions = []DeliveryAction{ActionRedeliver, ActionResubmit, ActionSkip}

func ParseDeliveryAction(s string) (DeliveryAction, error) {
	return parseEnum("delivery action", s, AllDeliveryActions)
}

// From lists the states the action takes a delivery from; the store refuses the others.
func (a DeliveryAction) From() []DeliveryState {
	switch a {
	case ActionRedeliver:
		return []DeliveryState{DeliveryFailed, DeliveryStalled, DeliveryRetrying, DeliveryDelivered}
	case ActionResubmit:
		return []DeliveryState{DeliveryFailed, DeliveryStalled}
	case ActionSkip:
		return []DeliveryState{DeliveryFailed, DeliveryParked}
	}
	return nil
}

// MaxBulkDeliveries bounds the deliveries one bulk action takes.
const MaxBulkDeliveries = 1000

// Narrow keeps f to the dead-letter states a takes (resubmit and redeliver take failed
// ones, skip both), so a filter counts only what the action would change; false when f
// asks for a state a does not take.
func (a DeliveryAction) Narrow(f *DeadLetterFilter) bool {
	var takes []DeliveryState
	for _, st := range DeadLetterStates {
		if slices.Contains(a.From(), st) {
			takes = append(takes, st)
		}
	}
	switch {
	case f.State != "":
		return slices.Contains(takes, f.State)
	case len(takes) == 1:
		f.State = takes[0]
	}
	return len(takes) > 0
}
