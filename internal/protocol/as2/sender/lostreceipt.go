package sender

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"wharf/internal/persistence"
	"wharf/internal/storage"
)

// unrecordedReceipt finds the receipt stage a record claimed when no row names it yet.
// A sync MDN is recorded, and its blob written, before the attempt's outcome records the
// payload row; a process that ends in between (a crash, a SIGKILL) leaves the claim and
// the blob without the row, and the next attempt settles the delivery from the record
// without sending again. The blob, found by its key, is handed to the engine with that
// outcome, so the message keeps the MDN that settled it. Nil when there is nothing to
// recover: the record holds no claim, the row exists, or the blob never got written (the
// process ended between the MDN's record and the blob's write).
func (c *core) unrecordedReceipt(ctx context.Context, rec OutboundRecord) (*persistence.Payload, error) {
	if !rec.ReceiptStored {
		return nil, nil
	}
	_, err := c.store.GetPayload(ctx, rec.MessageID, persistence.PayloadReceipt)
	if err == nil {
		return nil, nil
	}
	if !errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("read the receipt of message %d: %w", rec.MessageID, err)
	}
	key, err := storage.Key(rec.MessageID, persistence.PayloadReceipt)
	if err != nil {
		return nil, err
	}
	r, err := c.blobs.Open(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		c.log.WarnContext(ctx, "the MDN that settled the AS2 message was not kept before the process ended",
			"as2_message_id", rec.AS2MessageID)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return nil, fmt.Errorf("read the receipt blob of message %d: %w", rec.MessageID, err)
	}
	c.log.InfoContext(ctx, "MDN kept before the process ended is recorded as the receipt", "as2_message_id", rec.AS2MessageID)
	return &persistence.Payload{MessageID: rec.MessageID, Stage: persistence.PayloadReceipt,
		Key: key, Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), CreatedAt: c.now().UTC()}, nil
}
