package sender

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"wharf/internal/delivery"
)

var _ delivery.Recoverer = (*Sender)(nil)

// Recovered decides the next try after Deliver panicked (a message or a partner's
// answer that a parser could not take). The instance's retry policy is only a 1 s
// backstop, so the partner profile's policy decides here as it does for any other
// failure; a send that was under way is recorded as retrying with the panic as reason.
func (s *Sender) Recovered(ctx context.Context, a delivery.Attempt, cause error) delivery.Result {
	policy := delivery.RetryPolicy{}.WithDefaults()
	out, err := s.dir.Outbound(ctx, string(a.Message.From), string(a.Message.To))
	if err != nil {
		s.log.WarnContext(ctx, "resolve AS2 profiles after a panic; the default retry policy applies", "error", err)
	} else {
		policy = out.Remote.Retry
	}
	rec, err := currentRecord(ctx, s.db, a.Delivery.ID)
	if err == nil && rec.Outcome == OutcomeSending {
		return s.retry(ctx, &rec, policy, delivery.ClassInternal, cause, time.Time{}, 0, "")
	}
	dec := policy.Decide(delivery.ClassInternal, "partner profile's policy")
	d, ok := dec.Delay(a.Number, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	if !ok {
		return delivery.Permanent(delivery.ClassInternal, fmt.Errorf("%w — retries exhausted after %d attempts (%s)", cause, a.Number, dec.Source))
	}
	return delivery.RetryAt(s.now().Add(d), delivery.ClassInternal, cause)
}
