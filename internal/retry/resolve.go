package retry

import (
	"math/rand/v2"
	"strings"
	"time"
)

// builtinRules apply when neither the route's nor the target's policy has a rule for the
// class: a request the receiver refused, or a partner's refusal, comes out the same when
// sent again, so neither is retried unless an operator's rule says so.
var builtinRules = map[Class]Rule{
	ClassHTTP4xx: {Never: true},
	ClassRefused: {Never: true},
}

// Decision is the schedule that governs one failure, every field filled in, and where it
// came from.
type Decision struct {
	Class      Class
	Never      bool
	Strategy   Strategy
	Base       time.Duration
	MaxDelay   time.Duration
	MaxRetries int
	Jitter     float64
	// Source names the policy and rule that decided, for the delivery's history:
	// "route policy, rule http_5xx", "target policy, default", "built-in rule http_4xx".
	Source string
}

// Resolve picks the schedule for a failure of class c: the rule for c of the route's
// policy, else of the target's policy, else the built-in rule for c; then the route
// policy's default fields, then the target policy's, then the defaults fill what the
// rule leaves unset. route is nil when the route keeps the target's policy.
func Resolve(c Class, target Policy, route *Policy) Decision {
	var rule *Rule
	var source string
	switch {
	case route != nil && route.Rules.For(c) != nil:
		rule, source = route.Rules.For(c), "route policy, rule "+string(c)
	case target.Rules.For(c) != nil:
		rule, source = target.Rules.For(c), "target policy, rule "+string(c)
	default:
		if b, ok := builtinRules[c]; ok {
			rule, source = &b, "built-in rule "+string(c)
		} else if route != nil && !route.defaults().empty() {
			source = "route policy, default"
		} else {
			source = "target policy, default"
		}
	}
	d := Decision{Class: c, Source: source}
	var r Rule
	if rule != nil {
		if rule.Never {
			d.Never = true
			return d
		}
		r = *rule
	}
	if route != nil {
		r.fill(route.defaults())
	}
	r.fill(target.defaults())
	r.fill(Policy{}.WithDefaults().defaults())
	d.Strategy, d.Base, d.MaxDelay = r.Strategy, time.Duration(r.Base), time.Duration(r.MaxDelay)
	d.MaxRetries, d.Jitter = *r.MaxRetries, *r.Jitter
	return d
}

// defaults are the policy's own fields as a rule.
func (p Policy) defaults() Rule {
	return Rule{Strategy: p.Strategy, Base: p.Base, MaxDelay: p.MaxDelay, MaxRetries: p.MaxRetries, Jitter: p.Jitter}
}

// fill sets the fields r leaves unset from o.
func (r *Rule) fill(o Rule) {
	if r.Strategy == "" {
		r.Strategy = o.Strategy
	}
	if r.Base == 0 {
		r.Base = o.Base
	}
	if r.MaxDelay == 0 {
		r.MaxDelay = o.MaxDelay
	}
	if r.MaxRetries == nil {
		r.MaxRetries = o.MaxRetries
	}
	if r.Jitter == nil {
		r.Jitter = o.Jitter
	}
}

// Delay is the wait before the retry that follows failed attempt number attempt (1-based),
// or false when the decision is never to retry or its retries are used up. The delay is
// base (fixed), base × attempt (linear) or base × 2^(attempt−1) (exponential), capped at
// MaxDelay, then spread by up to ±Jitter of itself and capped again. rnd draws the
// jitter; nil leaves the delay unspread (a test that wants fixed figures, or the same
// draws, passes its own).
func (d Decision) Delay(attempt int, rnd *rand.Rand) (time.Duration, bool) {
	if d.Never || attempt > d.MaxRetries {
		return 0, false
	}
	n := attempt - 1 // retries so far
	var w time.Duration
	switch d.Strategy {
	case Fixed:
		w = d.Base
	case Linear:
		w = d.Base * time.Duration(n+1)
	default:
		w = d.Base
		for i := 0; i < n && w < d.MaxDelay; i++ {
			w *= 2
		}
	}
	if w > d.MaxDelay || w < 0 {
		w = d.MaxDelay
	}
	if d.Jitter > 0 && rnd != nil {
		w += time.Duration((rnd.Float64()*2 - 1) * float64(w) * d.Jitter)
		w = min(max(w, 0), d.MaxDelay)
	}
	return w, true
}

// Delay is the delay of the policy's default schedule (no class, no route); see
// Decision.Delay.
func (p Policy) Delay(attempt int, rnd *rand.Rand) (time.Duration, bool) {
	return Resolve("", p, nil).Delay(attempt, rnd)
}

// Decide resolves class c under p alone, naming p as name in the decision's source (a
// partner profile's policy, which keeps its own schedule).
func (p Policy) Decide(c Class, name string) Decision {
	d := Resolve(c, p, nil)
	d.Source = strings.Replace(d.Source, "target policy", name, 1)
	return d
}
