package module

import "context"

// MessageIndex is implemented by a module runtime whose messages carry an identity of the
// protocol (the AS2 Message-ID) and a receipt: the message list shows both and finds
// messages by the identity, without the core importing the module.
type MessageIndex interface {
	// FindMessages returns the messages whose protocol identity is ref, exactly (a
	// message sent again under a new identity is found by each).
	FindMessages(ctx context.Context, ref string) ([]int64, error)
	// MessageRefs returns, of ids, the messages the module knows, with their identity and
	// receipt; ids it does not know are absent.
	MessageRefs(ctx context.Context, ids []int64) (map[int64]MessageRef, error)
}

// MessageRef is a message's protocol identity and the state of its receipt in a few
// words ("signed, verified", "awaited", "none asked"); either may be empty.
type MessageRef struct {
	Ref     string
	Receipt string
}
