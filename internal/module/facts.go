package module

import (
	"context"
	"time"
)

// MessageFacter is implemented by a module runtime that can read one of its messages for
// the verdict at the top of the message's page: what the receipt proved, what went wrong
// and what to do about it, in words the core shows without knowing the protocol.
type MessageFacter interface {
	// MessageFacts reads the message's protocol records; ok false when the module had no
	// part in it.
	MessageFacts(ctx context.Context, messageID int64) (facts MessageFacts, ok bool, err error)
}

// MessageFacts is a module's reading of one message. A moment inside its sentences is
// written in RFC 3339 (2026-03-01T09:00:00Z); the page shows it in its display zone.
type MessageFacts struct {
	// Receipt is what the partner's receipt of a message we sent proved ("signed receipt
	// verified, MIC matched"), or the receipt we answered a partner's message with;
	// empty when there is none.
	Receipt string
	// RefusedByPartner: the partner refused what we sent (a negative receipt).
	// RefusedByUs: we refused what the partner sent.
	RefusedByPartner, RefusedByUs bool
	// Problem says what went wrong, in words that follow "Refused by ACME: " or
	// "Failed: " ("they could not verify our signature"); empty when nothing did.
	Problem string
	// Fix is what to do about Problem, where the module can tell; empty otherwise.
	Fix string
	// AwaitingUntil is when the receipt awaited stops being waited for; zero when none is.
	AwaitingUntil time.Time
}
