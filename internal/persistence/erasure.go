package persistence

import (
	"fmt"
	"time"
)

// ErasedFileName is the original file name an erased message keeps: the name a sender
// gave a document can itself be content (a person's name, an invoice number).
const ErasedFileName FileName = "erased"

// MaxErasureBatch bounds how many messages one erasure transaction erases; a party's
// range is erased in batches of it, each complete on its own.
const MaxErasureBatch = 500

// ErrErased refuses what needs an erased message's content: a download, a redispatch, a
// redelivery or resubmission of one of its deliveries.
var ErrErased = fmt.Errorf("message erased: %w", ErrConflict)

// ErasableStates are the delivery states a message's deliveries must all be in for it to
// be erased: final ones, so no attempt ever reads a payload erasure removed.
var ErasableStates = []DeliveryState{DeliveryDelivered, DeliveryFailed, DeliverySkipped}

// ErasureFilter selects the messages of a party in a time range for erasure: those the
// party sent or received, created at or after From and before To.
type ErasureFilter struct {
	Party PartyName `json:"party"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
}

// Check refuses a filter without a valid party or with a missing or empty range, naming
// every wrong field at once.
func (f ErasureFilter) Check() error {
	var es FieldErrors
	if _, err := ParsePartyName(string(f.Party)); err != nil {
		es.Add("party", err.Error())
	}
	if f.From.IsZero() {
		es.Add("from", "required: the start of the range (RFC 3339)")
	}
	if f.To.IsZero() {
		es.Add("to", "required: the end of the range (RFC 3339), after from")
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.To.After(f.From) {
		es.Add("to", "must be after from")
	}
	return es.Err()
}

// ErasureCount is what an erasure of a filter would come to: the messages it erases, and
// those it leaves because deliveries of theirs are still under way (or their source still
// holds them) or because they are erased already.
type ErasureCount struct {
	Erasable      int `json:"erasable"`
	InFlight      int `json:"in_flight"`
	AlreadyErased int `json:"already_erased"`
}

// ErasureResult is what an erasure did: the messages it erased, and the count of what it
// left as ErasureCount names them.
type ErasureResult struct {
	Erased        int `json:"erased"`
	InFlight      int `json:"in_flight"`
	AlreadyErased int `json:"already_erased"`
	// PayloadsRemoved counts the payload blobs deleted from storage.
	PayloadsRemoved int `json:"payloads_removed"`
}
