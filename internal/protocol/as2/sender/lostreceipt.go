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
	key, err := c.blobs.KeyOf(rec.MessageID, persistence.PayloadReceipt)
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

// recordSyncMDN records a sync MDN and returns the receipt stage for the engine to flush
// and record with the outcome, if the record holds the message's receipt claim. The
// blob is written before the write that records the MDN and claims the receipt, so a
// process that ends after that write leaves the blob for unrecordedReceipt to find. A
// blob already at the key that no row names is one an attempt wrote before its process
// ended: the claim's holder replaces it with the MDN it recorded. The outcome stands
// either way: the partner has the message whether or not its receipt could be kept.
func (c *core) recordSyncMDN(ctx context.Context, rec *OutboundRecord, m MDNRecord, res sendResult, contentType string, body []byte) []persistence.Payload {
	written, werr := c.writeReceipt(ctx, *rec, contentType, body, false)
	if werr != nil {
		c.log.ErrorContext(ctx, "keep the MDN as the message's receipt", "error", werr)
	}
	// Without a blob the record claims nothing, so a later receipt of the message can.
	_, claimed, err := recordMDN(ctx, c.db, rec.ID, rec.MessageID, m, res, werr == nil)
	if err != nil {
		c.log.ErrorContext(ctx, "record the MDN", "error", err)
	}
	switch {
	case !claimed && written != nil:
		// Another record of the message holds the receipt and writes its own blob.
		if err := c.blobs.Delete(ctx, written.Key); err != nil {
			c.log.WarnContext(ctx, "delete a receipt blob another record's receipt replaces", "error", err)
		}
		return nil
	case !claimed:
		return nil
	case written != nil:
		return []persistence.Payload{*written}
	}
	// The message had a receipt blob already: a relayed message's, which a row names,
	// or an unrecorded one.
	_, err = c.store.GetPayload(ctx, rec.MessageID, persistence.PayloadReceipt)
	if !errors.Is(err, persistence.ErrNotFound) {
		if err != nil {
			c.log.ErrorContext(ctx, "read the message's receipt", "error", err)
		}
		return nil
	}
	p, err := c.writeReceipt(ctx, *rec, contentType, body, true)
	if err != nil {
		c.log.ErrorContext(ctx, "replace an unrecorded receipt blob", "error", err)
		return nil
	}
	return []persistence.Payload{*p}
}
