package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"wharf/internal/persistence"
)

// A holder names one process across its restarts (the standalone process keeps its
// holder in its data directory). The claim tokens it takes begin with "<holder>:", so at
// its next start the process can tell its own interrupted claims from those of other
// live processes sharing the database, and hand them back without waiting for their
// leases to run out.

const (
	maxHolderLen = 64
	// previousRunReason is the history's reason for a claim a process's earlier run held.
	previousRunReason = "released at start: the previous run of this process ended during the attempt"
)

// ValidHolder checks a holder: empty, or 1 to 64 lower-case hexadecimal characters.
func ValidHolder(h string) error {
	if len(h) > maxHolderLen {
		return fmt.Errorf("holder %q: longer than %d characters", h, maxHolderLen)
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("holder %q: only lower-case hexadecimal characters are allowed", h)
		}
	}
	return nil
}

func (s *Store) holderPrefix() string {
	if s.holder == "" {
		return ""
	}
	return s.holder + ":"
}

// ReleasePreviousClaims turns every delivery still claimed under this store's holder into
// retrying, due now, and returns them. A process calls it once at start, before it claims
// anything: what it finds can only be its previous run's, which ended without releasing
// (killed, or a power cut). Claims of other holders are left to their own processes and
// the sweep.
func (s *Store) ReleasePreviousClaims(ctx context.Context, now time.Time) ([]persistence.Delivery, error) {
	if s.holder == "" {
		return nil, errors.New("release previous claims: the store has no holder")
	}
	now = utc(now)
	prefix := s.holderPrefix()
	var out []persistence.Delivery
	for {
		batch, err := s.retryClaimed(ctx, now, maxClaim, `substr(d.claim_token, 1, `+fmt.Sprint(len(prefix))+`) = ?`, prefix, previousRunReason)
		if err != nil {
			return nil, fmt.Errorf("release previous claims: %w", err)
		}
		out = append(out, batch...)
		if len(batch) < maxClaim {
			return out, nil
		}
	}
}
