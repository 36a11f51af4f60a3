package delivery

import (
	"fmt"
	"math/rand/v2"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// The retry policy's types live in package retry, which routes and partner profiles use
// as well; targets name them here, beside the rest of what they return and configure.
type (
	RetryStrategy = retry.Strategy
	Duration      = retry.Duration
	RetryPolicy   = retry.Policy
	RetryRule     = retry.Rule
)

const (
	RetryFixed       = retry.Fixed
	RetryLinear      = retry.Linear
	RetryExponential = retry.Exponential
)

// DefaultMaxRetries is used when a policy names none.
const DefaultMaxRetries = retry.DefaultMaxRetries

// DefaultJitter is the spread of a policy that names none: about ±20 %.
const DefaultJitter = retry.DefaultJitter

// decide turns a target's result into the completion the store records. A failure is
// judged by the rule for its class (see retry.Resolve: the route's override, then the
// target's policy), and the history line of a retry or a failure names that rule.
func decide(r Result, target RetryPolicy, route *RetryPolicy, attempt int, now time.Time, rnd *rand.Rand) persistence.Completion {
	c := persistence.Completion{Kind: r.Kind, At: now, Pause: r.Pause}
	if r.Err != nil {
		c.Reason = r.Err.Error()
	}
	switch r.Kind {
	case persistence.OutcomeDelivered:
		if c.Reason == "" {
			c.Reason = r.Note
		}
	case persistence.OutcomeAwaitingAck:
		c.AckDeadline, c.ExternalRef = r.Deadline, r.Ref
		if c.Reason == "" {
			c.Reason = r.Note
		}
	case persistence.OutcomeRetry:
		c.ErrorClass = string(r.Class)
		dec := retry.Resolve(r.Class, target, route)
		d, ok := dec.Delay(attempt, rnd)
		switch {
		case dec.Never:
			c.Kind = persistence.OutcomeFailed
			c.Reason = fmt.Sprintf("%s — not retried (%s: never)", reasonOf(r), dec.Source)
		case !ok:
			c.Kind = persistence.OutcomeFailed
			c.Reason = fmt.Sprintf("%s — retries exhausted after %d attempts (%s, %s)", reasonOf(r), attempt, dec.Source, dec.Strategy)
		default:
			c.NextAttemptAt = now.Add(d)
			asked := ""
			if !r.At.IsZero() && r.At.After(c.NextAttemptAt) {
				c.NextAttemptAt, asked = r.At, ", as the receiver asked"
			}
			c.Reason = fmt.Sprintf("%s — retry %d of %d in %s%s (%s, %s)", reasonOf(r), attempt, dec.MaxRetries,
				roundDelay(c.NextAttemptAt.Sub(now)), asked, dec.Source, dec.Strategy)
		}
	case persistence.OutcomeFailed:
		c.ErrorClass = string(r.Class)
		if c.Reason == "" {
			c.Reason = errNoReason.Error()
		}
	}
	return c
}

// roundDelay shows a delay as people read it: whole seconds from a second up.
func roundDelay(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

func reasonOf(r Result) string {
	if r.Err == nil {
		return errNoReason.Error()
	}
	return r.Err.Error()
}
