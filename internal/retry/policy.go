package retry

import (
	"fmt"
	"time"
)

// Strategy is how the delay grows between attempts.
type Strategy string

const (
	Fixed       Strategy = "fixed"       // base
	Linear      Strategy = "linear"      // base × (attempt+1)
	Exponential Strategy = "exponential" // base × 2^attempt
)

var allStrategies = []Strategy{Fixed, Linear, Exponential}

// ParseStrategy parses a strategy name.
func ParseStrategy(s string) (Strategy, error) {
	for _, v := range allStrategies {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("invalid retry strategy %q: want fixed, linear or exponential", s)
}

func (s *Strategy) UnmarshalText(b []byte) error {
	v, err := ParseStrategy(string(b))
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

// Policy decides, per failed attempt, whether and when to try again. Its own fields are
// the default schedule; Rules hold schedules by failure class, whose unset fields take
// the policy's.
type Policy struct {
	Strategy   Strategy `json:"strategy,omitempty"`
	Base       Duration `json:"base,omitempty"`
	MaxDelay   Duration `json:"max_delay,omitempty"`
	MaxRetries *int     `json:"max_retries,omitempty"`
	// Jitter spreads each delay by up to this fraction either way (0 to 1); unset means
	// DefaultJitter, so a recovered partner is not hit by a whole backlog in one second,
	// and 0 turns the spread off.
	Jitter *float64 `json:"jitter,omitempty"`
	Rules  Rules    `json:"rules,omitzero"`
}

// Rule is the schedule of one failure class, or Never: such failures are not retried.
// A rule with no field set (what a form sends for a row left empty) is no rule.
type Rule struct {
	Never      bool     `json:"never,omitempty"`
	Strategy   Strategy `json:"strategy,omitempty"`
	Base       Duration `json:"base,omitempty"`
	MaxDelay   Duration `json:"max_delay,omitempty"`
	MaxRetries *int     `json:"max_retries,omitempty"`
	Jitter     *float64 `json:"jitter,omitempty"`
}

// Rules are a policy's rules by class. A struct rather than a map, so strict decoding
// refuses an unknown class by name and forms list the classes in a fixed order.
type Rules struct {
	Transport *Rule `json:"transport,omitempty"`
	Timeout   *Rule `json:"timeout,omitempty"`
	Throttled *Rule `json:"http_throttled,omitempty"`
	HTTP5xx   *Rule `json:"http_5xx,omitempty"`
	HTTP4xx   *Rule `json:"http_4xx,omitempty"`
	Refused   *Rule `json:"partner_refusal,omitempty"`
	Internal  *Rule `json:"internal,omitempty"`
}

// slot is where the rule of class c lives.
func (r *Rules) slot(c Class) **Rule {
	switch c {
	case ClassTransport:
		return &r.Transport
	case ClassTimeout:
		return &r.Timeout
	case ClassThrottled:
		return &r.Throttled
	case ClassHTTP5xx:
		return &r.HTTP5xx
	case ClassHTTP4xx:
		return &r.HTTP4xx
	case ClassRefused:
		return &r.Refused
	case ClassInternal:
		return &r.Internal
	}
	return nil
}

// For returns the rule of class c, or nil when the policy has none (an empty rule is none).
func (r Rules) For(c Class) *Rule {
	s := r.slot(c)
	if s == nil || *s == nil || (*s).empty() {
		return nil
	}
	return *s
}

// Set puts rule as the rule of class c; nil or an empty rule removes it.
func (r *Rules) Set(c Class, rule *Rule) {
	if rule != nil && rule.empty() {
		rule = nil
	}
	if s := r.slot(c); s != nil {
		*s = rule
	}
}

func (r Rule) empty() bool { return r == Rule{} }

// DefaultMaxRetries is used when a policy names none.
const DefaultMaxRetries = 10

// DefaultJitter is the spread of a policy that names none: about ±20 %.
const DefaultJitter = 0.2

// WithDefaults fills unset default fields: exponential from 30 s, capped at 1 h, 10
// retries, ±20 % jitter. Rules are left as they are: their unset fields take these.
func (p Policy) WithDefaults() Policy {
	if p.Strategy == "" {
		p.Strategy = Exponential
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

// Validate checks the policy's fields; an error starts with the field's dotted name
// ("rules.http_5xx.base: …").
func (p Policy) Validate() error {
	if err := checkSchedule(p.Strategy, p.Base, p.MaxDelay, p.MaxRetries, p.Jitter); err != nil {
		return err
	}
	for _, c := range AllClasses {
		r := p.Rules.For(c)
		if r == nil {
			continue
		}
		if err := r.validate(); err != nil {
			return fmt.Errorf("rules.%s.%w", c, err)
		}
	}
	return nil
}

func (r Rule) validate() error {
	if r.Never && (r.Strategy != "" || r.Base != 0 || r.MaxDelay != 0 || r.MaxRetries != nil || r.Jitter != nil) {
		return fmt.Errorf("never: a rule that never retries takes no strategy, base, max_delay, max_retries or jitter")
	}
	return checkSchedule(r.Strategy, r.Base, r.MaxDelay, r.MaxRetries, r.Jitter)
}

func checkSchedule(s Strategy, base, maxDelay Duration, retries *int, jitter *float64) error {
	if s != "" {
		if _, err := ParseStrategy(string(s)); err != nil {
			return fmt.Errorf("strategy: %w", err)
		}
	}
	if retries != nil && (*retries < 0 || *retries > 1000) {
		return fmt.Errorf("max_retries: must be between 0 and 1000")
	}
	if jitter != nil && (*jitter < 0 || *jitter > 1) {
		return fmt.Errorf("jitter: must be between 0 and 1")
	}
	if maxDelay != 0 && base > maxDelay {
		return fmt.Errorf("base: must not exceed max_delay")
	}
	return nil
}
