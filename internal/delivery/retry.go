package delivery

import (
	"fmt"
	"math/rand/v2"
	"time"

	"wharf/internal/persistence"
)

// RetryStrategy is how the delay grows between attempts.
type RetryStrategy string

const (
	RetryFixed       RetryStrategy = "fixed"       // base
	RetryLinear      RetryStrategy = "linear"      // base × (attempt+1)
	RetryExponential RetryStrategy = "exponential" // base × 2^attempt
)

var allRetryStrategies = []RetryStrategy{RetryFixed, RetryLinear, RetryExponential}

// ParseRetryStrategy parses a strategy name.
func ParseRetryStrategy(s string) (RetryStrategy, error) {
	for _, v := range allRetryStrategies {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("invalid retry strategy %q: want fixed, linear or exponential", s)
}

func (s *RetryStrategy) UnmarshalText(b []byte) error {
	v, err := ParseRetryStrategy(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Duration is a time.Duration written as text ("30s", "5m") in JSON.
type Duration time.Duration

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a form like 30s or 5m", string(b))
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: negative", string(b))
	}
	*d = Duration(v)
	return nil
}

// RetryPolicy decides, per failed attempt, whether and when to try again.
type RetryPolicy struct {
	Strategy   RetryStrategy `json:"strategy,omitempty"`
	Base       Duration      `json:"base,omitempty"`
	MaxDelay   Duration      `json:"max_delay,omitempty"`
	MaxRetries *int          `json:"max_retries,omitempty"`
	// Jitter spreads each delay by up to this fraction either way (0 to 1); unset means
	// DefaultJitter, so a recovered partner is not hit by a whole backlog in one second,
	// and 0 turns the spread off.
	Jitter *float64 `json:"jitter,omitempty"`
}

// DefaultMaxRetries is used when a policy names none.
const DefaultMaxRetries = 10

// DefaultJitter is the spread of a policy that names none: about ±20 %.
const DefaultJitter = 0.2

// WithDefaults fills unset fields: exponential from 30 s, capped at 1 h, 10 retries,
// ±20 % jitter.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.Strategy == "" {
		p.Strategy = RetryExponential
	}
	if p.Base == 0 {
		p.Base = Duration(30 * time.Second)
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = Duration(time.Hour)
	}
	if p.MaxRetries == nil {
		n := DefaultMaxRetries
		p.MaxRetries = &n
	}
	if p.Jitter == nil {
		j := DefaultJitter
		p.Jitter = &j
	}
	return p
}

// Validate checks the policy's fields.
func (p RetryPolicy) Validate() error {
	if p.Strategy != "" {
		if _, err := ParseRetryStrategy(string(p.Strategy)); err != nil {
			return fmt.Errorf("strategy: %w", err)
		}
	}
	if p.MaxRetries != nil && (*p.MaxRetries < 0 || *p.MaxRetries > 1000) {
		return fmt.Errorf("max_retries: must be between 0 and 1000")
	}
	if p.Jitter != nil && (*p.Jitter < 0 || *p.Jitter > 1) {
		return fmt.Errorf("jitter: must be between 0 and 1")
	}
	if p.MaxDelay != 0 && p.Base > p.MaxDelay {
		return fmt.Errorf("base: must not exceed max_delay")
	}
	return nil
}

// Delay is the wait before the retry that follows failed attempt number attempt (1-based),
// or false when the policy's retries are used up. rnd draws the jitter; nil leaves the
// delay unspread (a test that wants fixed figures, or the same draws, passes its own).
func (p RetryPolicy) Delay(attempt int, rnd *rand.Rand) (time.Duration, bool) {
	p = p.WithDefaults()
	if attempt > *p.MaxRetries {
		return 0, false
	}
	n := attempt - 1 // retries so far
	base := time.Duration(p.Base)
	var d time.Duration
	switch p.Strategy {
	case RetryFixed:
		d = base
	case RetryLinear:
		d = base * time.Duration(n+1)
	default:
		d = base
		for i := 0; i < n && d < time.Duration(p.MaxDelay); i++ {
			d *= 2
		}
	}
	if max := time.Duration(p.MaxDelay); d > max || d < 0 {
		d = max
	}
	if *p.Jitter > 0 && rnd != nil {
		spread := float64(d) * *p.Jitter
		d += time.Duration((rnd.Float64()*2 - 1) * spread)
		if d < 0 {
			d = 0
		}
	}
	return d, true
}

// decide turns a target's result into the completion the store records.
func decide(r Result, p RetryPolicy, attempt int, now time.Time, rnd *rand.Rand) persistence.Completion {
	c := persistence.Completion{Kind: r.Kind, At: now}
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
		d, ok := p.Delay(attempt, rnd)
		if !ok {
			c.Kind = persistence.OutcomeFailed
			c.Reason = fmt.Sprintf("retries exhausted after %d attempts: %s", attempt, reasonOf(r))
			break
		}
		c.NextAttemptAt = now.Add(d)
		if !r.At.IsZero() && r.At.After(c.NextAttemptAt) {
			c.NextAttemptAt = r.At
		}
	case persistence.OutcomeFailed:
		if c.Reason == "" {
			c.Reason = errNoReason.Error()
		}
	}
	return c
}

func reasonOf(r Result) string {
	if r.Err == nil {
		return errNoReason.Error()
	}
	return r.Err.Error()
}
