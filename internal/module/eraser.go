package module

import (
	"context"
	"strings"
)

// MessageEraser is implemented by a module runtime whose tables keep content of messages
// (a file name a partner sent, a sample of a request): EraseMessages clears it for the
// messages ids in tx, the transaction that marks them erased, so an erasure never commits
// with a module's copy left behind. It keeps what identifies and counts (ids, parties,
// sizes, statuses, times).
type MessageEraser interface {
	EraseMessages(ctx context.Context, tx Tx, ids []int64) error
}

// IDList is the placeholders and arguments of an IN list of ids: "(?, ?, …)".
func IDList(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")", args
}
