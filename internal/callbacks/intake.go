package callbacks

import (
	"context"
	"errors"
	"net/http"

	"wharf/internal/persistence"
)

// Intake is what the REST API takes status callbacks through: the verifier and the spool.
type Intake struct {
	Verifier *Verifier
	Spool    *Spool
}

// Verify reports whether the callback's signature verifies; an error is ours (the
// database), not the caller's.
func (in Intake) Verify(ctx context.Context, target persistence.InstanceName, header http.Header, body []byte) (bool, error) {
	err := in.Verifier.Verify(ctx, target, header, body)
	if errors.Is(err, ErrUnauthorized) {
		return false, nil
	}
	return err == nil, err
}

// Append queues a verified callback durably.
func (in Intake) Append(ctx context.Context, cb persistence.StatusCallback) error {
	return in.Spool.Append(ctx, cb)
}
