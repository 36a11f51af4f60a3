package erasure

import (
	"context"
	"fmt"

	"wharf/internal/persistence"
)

// Blobs deletes payload blobs (storage.Stores: local disk and S3, by key); deleting a
// blob that is gone already is no error.
type Blobs interface {
	Delete(ctx context.Context, key string) error
}

// PayloadRecords deletes payload records (db.Store).
type PayloadRecords interface {
	DeletePayloadRecords(ctx context.Context, ps []persistence.Payload) error
}

// RemovePayloads removes payloads of messages: each blob from the store that holds it,
// then their records in one transaction. The order makes a crash harmless: a record
// whose blob is gone is found and removed again by the next run, and no blob is ever
// left without a record naming it. Erasure uses it; so can anything else that removes
// payloads (retention by age).
func RemovePayloads(ctx context.Context, blobs Blobs, records PayloadRecords, ps []persistence.Payload) error {
	for _, p := range ps {
		if err := blobs.Delete(ctx, p.Key); err != nil {
			return fmt.Errorf("remove payload %s of message %d: %w", p.Stage, p.MessageID, err)
		}
	}
	if err := records.DeletePayloadRecords(ctx, ps); err != nil {
		return fmt.Errorf("remove payloads: %w", err)
	}
	return nil
}
