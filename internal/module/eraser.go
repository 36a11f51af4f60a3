package module

import "context"

// MessageEraser is implemented by a module runtime whose tables keep content of messages
// (a file name a partner sent, a sample of a request): EraseMessages clears it for the
// messages ids in tx, the transaction that marks them erased, so an erasure never commits
// with a module's copy left behind. It keeps what identifies and counts (ids, parties,
// sizes, statuses, times).
type MessageEraser interface {
	EraseMessages(ctx context.Context, tx Tx, ids []int64) error
}
