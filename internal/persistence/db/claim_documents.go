package db

import (
	"context"
	"fmt"

	"wharf/internal/persistence"
)

// claimedDocuments reads the unpacked stage of the claimed deliveries' messages in one
// statement of the claim's transaction, by message id. Every attempt opens its document;
// looked up one by one, each would cost a read transaction of its own (three round
// trips) before its target could begin, on every claimer's critical path.
func (t *txn) claimedDocuments(ctx context.Context, trs []transition) (map[int64]persistence.Payload, error) {
	if len(trs) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(trs))
	seen := make(map[int64]bool, len(trs))
	for _, tr := range trs {
		if !seen[tr.d.MessageID] {
			seen[tr.d.MessageID] = true
			ids = append(ids, tr.d.MessageID)
		}
	}
	cond, arg := t.s.idList("message_id", ids)
	rows, err := t.query(ctx, `SELECT `+payloadCols+` FROM payloads WHERE stage = ? AND `+cond,
		string(persistence.PayloadUnpacked), arg)
	docs, err := collect(rows, err, scanPayload)
	if err != nil {
		return nil, fmt.Errorf("read the claimed documents: %w", err)
	}
	out := make(map[int64]persistence.Payload, len(docs))
	for _, p := range docs {
		out[p.MessageID] = p
	}
	return out, nil
}
