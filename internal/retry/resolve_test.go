package retry

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// testClock is the clock the schedules are laid out against: each retry's time is the
// failure's time plus the delay, and the next failure happens at that time.
type testClock struct{ now time.Time }

func (c *testClock) advance(d time.Duration) time.Time {
	c.now = c.now.Add(d)
	return c.now
}

// TestStrategySchedules holds the exact delays of each strategy, retry by retry, against a
// test clock: the cap, the retries used up, and (with a seeded rand) every delay within
// [d·(1−j), d·(1+j)] of its unspread value d and never past the cap.
func TestStrategySchedules(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		rule  Rule
		want  []time.Duration // delays of retries 1, 2, …; the next attempt finds them used up
		times []string        // the retry times the clock shows, from 00:00:00
	}{
		{"fixed", Rule{Strategy: Fixed, Base: Duration(10 * s), MaxDelay: Duration(time.Hour), MaxRetries: intp(3)},
			[]time.Duration{10 * s, 10 * s, 10 * s}, []string{"00:00:10", "00:00:20", "00:00:30"}},
		{"fixed capped", Rule{Strategy: Fixed, Base: Duration(10 * s), MaxDelay: Duration(10 * s), MaxRetries: intp(2)},
			[]time.Duration{10 * s, 10 * s}, []string{"00:00:10", "00:00:20"}},
		{"linear", Rule{Strategy: Linear, Base: Duration(5 * s), MaxDelay: Duration(time.Hour), MaxRetries: intp(4)},
			[]time.Duration{5 * s, 10 * s, 15 * s, 20 * s}, []string{"00:00:05", "00:00:15", "00:00:30", "00:00:50"}},
		{"linear capped", Rule{Strategy: Linear, Base: Duration(5 * s), MaxDelay: Duration(12 * s), MaxRetries: intp(4)},
			[]time.Duration{5 * s, 10 * s, 12 * s, 12 * s}, []string{"00:00:05", "00:00:15", "00:00:27", "00:00:39"}},
		{"exponential", Rule{Strategy: Exponential, Base: Duration(10 * s), MaxDelay: Duration(time.Hour), MaxRetries: intp(5)},
			[]time.Duration{10 * s, 20 * s, 40 * s, 80 * s, 160 * s}, []string{"00:00:10", "00:00:30", "00:01:10", "00:02:30", "00:05:10"}},
		{"exponential capped", Rule{Strategy: Exponential, Base: Duration(10 * s), MaxDelay: Duration(time.Minute), MaxRetries: intp(6)},
			[]time.Duration{10 * s, 20 * s, 40 * s, 60 * s, 60 * s, 60 * s}, []string{"00:00:10", "00:00:30", "00:01:10", "00:02:10", "00:03:10", "00:04:10"}},
		{"no retries", Rule{Strategy: Fixed, Base: Duration(s), MaxRetries: intp(0)}, nil, nil},
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.Jitter = floatp(0)
			p := Policy{Rules: Rules{HTTP5xx: &tt.rule}}
			dec := Resolve(ClassHTTP5xx, p, nil)
			clock := &testClock{now: start}
			for i, want := range tt.want {
				d, ok := dec.Delay(i+1, nil)
				if !ok || d != want {
					t.Fatalf("retry %d: delay %s, %v; want %s", i+1, d, ok, want)
				}
				if got := clock.advance(d).Format("15:04:05"); got != tt.times[i] {
					t.Errorf("retry %d at %s, want %s", i+1, got, tt.times[i])
				}
			}
			if d, ok := dec.Delay(len(tt.want)+1, nil); ok {
				t.Errorf("attempt %d: retried after %s, want the retries used up", len(tt.want)+1, d)
			}

			// The same schedule with ±25 % jitter from a seeded rand.
			const j = 0.25
			tt.rule.Jitter = floatp(j)
			jittered := Resolve(ClassHTTP5xx, Policy{Rules: Rules{HTTP5xx: &tt.rule}}, nil)
			rnd := rand.New(rand.NewPCG(3, 5))
			for i, want := range tt.want {
				lo, hi := time.Duration(float64(want)*(1-j)), time.Duration(float64(want)*(1+j))
				hi = min(hi, time.Duration(tt.rule.MaxDelay))
				spread := false
				for range 200 {
					d, ok := jittered.Delay(i+1, rnd)
					if !ok || d < lo || d > hi {
						t.Fatalf("retry %d: jittered delay %s outside [%s, %s]", i+1, d, lo, hi)
					}
					spread = spread || d != want
				}
				if !spread {
					t.Errorf("retry %d: jitter never changed the delay %s", i+1, want)
				}
			}
		})
	}
}

// TestResolve holds the order in which a failure's rule is found: the route's rule for
// the class, the target's rule, the built-in rule; then the fields a rule leaves unset
// from the route's defaults, the target's, and the built-in defaults.
func TestResolve(t *testing.T) {
	target := Policy{Strategy: Linear, Base: Duration(time.Minute), MaxRetries: intp(4), Jitter: floatp(0),
		Rules: Rules{
			HTTP5xx:   &Rule{Strategy: Exponential, Base: Duration(10 * time.Second), MaxRetries: intp(8)},
			Transport: &Rule{Never: true},
			Timeout:   &Rule{}, // what a form sends for an empty row: no rule
		}}
	route := &Policy{MaxDelay: Duration(10 * time.Minute),
		Rules: Rules{HTTP5xx: &Rule{MaxRetries: intp(2)}, HTTP4xx: &Rule{Strategy: Fixed, Base: Duration(5 * time.Second)}}}
	routeRulesOnly := &Policy{Rules: Rules{Internal: &Rule{Never: true}}}
	tests := []struct {
		name   string
		class  Class
		route  *Policy
		source string
		never  bool
		want   Decision // the schedule fields
	}{
		{"route rule, unset fields from route then target", ClassHTTP5xx, route, "route policy, rule http_5xx", false,
			Decision{Strategy: Linear, Base: time.Minute, MaxDelay: 10 * time.Minute, MaxRetries: 2}},
		{"target rule without route", ClassHTTP5xx, nil, "target policy, rule http_5xx", false,
			Decision{Strategy: Exponential, Base: 10 * time.Second, MaxDelay: time.Hour, MaxRetries: 8}},
		{"target never", ClassTransport, route, "target policy, rule transport", true, Decision{}},
		{"route rule beats the built-in 4xx rule", ClassHTTP4xx, route, "route policy, rule http_4xx", false,
			Decision{Strategy: Fixed, Base: 5 * time.Second, MaxDelay: 10 * time.Minute, MaxRetries: 4}},
		{"built-in 4xx rule", ClassHTTP4xx, nil, "built-in rule http_4xx", true, Decision{}},
		{"built-in refusal rule", ClassRefused, route, "built-in rule partner_refusal", true, Decision{}},
		{"empty rule is none: route defaults", ClassTimeout, route, "route policy, default", false,
			Decision{Strategy: Linear, Base: time.Minute, MaxDelay: 10 * time.Minute, MaxRetries: 4}},
		{"route with rules only: target defaults", ClassThrottled, routeRulesOnly, "target policy, default", false,
			Decision{Strategy: Linear, Base: time.Minute, MaxDelay: time.Hour, MaxRetries: 4}},
		{"route never", ClassInternal, routeRulesOnly, "route policy, rule internal", true, Decision{}},
		{"no class", "", nil, "target policy, default", false,
			Decision{Strategy: Linear, Base: time.Minute, MaxDelay: time.Hour, MaxRetries: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Resolve(tt.class, target, tt.route)
			if d.Source != tt.source || d.Never != tt.never {
				t.Fatalf("source %q never %v; want %q %v", d.Source, d.Never, tt.source, tt.never)
			}
			if tt.never {
				if delay, ok := d.Delay(1, nil); ok {
					t.Fatalf("a never rule retried after %s", delay)
				}
				return
			}
			got := Decision{Strategy: d.Strategy, Base: d.Base, MaxDelay: d.MaxDelay, MaxRetries: d.MaxRetries}
			if got != tt.want {
				t.Errorf("schedule %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestDefaultsKeepBehaviour: a policy with no rules retries 5xx, 408/429, timeouts,
// transport and our own errors on the default schedule and never retries other 4xx or a
// partner's refusal.
func TestDefaultsKeepBehaviour(t *testing.T) {
	for _, c := range AllClasses {
		d := Resolve(c, Policy{}, nil)
		wantNever := c == ClassHTTP4xx || c == ClassRefused
		if d.Never != wantNever {
			t.Errorf("%s: never %v, want %v", c, d.Never, wantNever)
		}
		if !wantNever && (d.Strategy != Exponential || d.Base != 30*time.Second || d.MaxRetries != DefaultMaxRetries) {
			t.Errorf("%s: schedule %+v, want the defaults", c, d)
		}
	}
}

// TestPolicyJSON holds the config shape: rules by class name, strict about unknown
// classes, and validation errors naming the rule's field.
func TestPolicyJSON(t *testing.T) {
	var p Policy
	in := `{"strategy":"fixed","base":"1m","rules":{"http_4xx":{"never":true},"http_5xx":{"strategy":"exponential","base":"10s","max_delay":"10m","max_retries":8}}}`
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	if r := p.Rules.For(ClassHTTP5xx); r == nil || r.Strategy != Exponential || *r.MaxRetries != 8 || time.Duration(r.MaxDelay) != 10*time.Minute {
		t.Fatalf("http_5xx rule %+v", r)
	}
	if r := p.Rules.For(ClassHTTP4xx); r == nil || !r.Never {
		t.Fatalf("http_4xx rule %+v", r)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var again Policy
	if err := json.Unmarshal(out, &again); err != nil || again.Rules.For(ClassHTTP5xx) == nil {
		t.Fatalf("round trip %s: %v", out, err)
	}
	dec := json.NewDecoder(strings.NewReader(`{"rules":{"http_6xx":{"never":true}}}`))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&Policy{}); err == nil || !strings.Contains(err.Error(), "http_6xx") {
		t.Errorf("unknown class: %v", err)
	}
	if out, _ := json.Marshal(Policy{}); string(out) != "{}" {
		t.Errorf("empty policy marshals as %s", out)
	}
}

func TestPolicyValidateNamesTheField(t *testing.T) {
	tests := []struct {
		p     Policy
		field string // "" for valid
	}{
		{Policy{Rules: Rules{HTTP5xx: &Rule{Strategy: Exponential, Base: Duration(time.Second)}}}, ""},
		{Policy{Rules: Rules{HTTP4xx: &Rule{Never: true}}}, ""},
		{Policy{Rules: Rules{Timeout: &Rule{}}}, ""},
		{Policy{Rules: Rules{HTTP5xx: &Rule{Base: Duration(time.Hour), MaxDelay: Duration(time.Minute)}}}, "rules.http_5xx.base"},
		{Policy{Rules: Rules{Throttled: &Rule{MaxRetries: intp(-1)}}}, "rules.http_throttled.max_retries"},
		{Policy{Rules: Rules{Internal: &Rule{Jitter: floatp(2)}}}, "rules.internal.jitter"},
		{Policy{Rules: Rules{Refused: &Rule{Strategy: "sometimes"}}}, "rules.partner_refusal.strategy"},
		{Policy{Rules: Rules{HTTP4xx: &Rule{Never: true, MaxRetries: intp(3)}}}, "rules.http_4xx.never"},
		{Policy{Jitter: floatp(-1)}, "jitter"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v: %v", tt.p, err)
		case tt.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.field+": ")):
			t.Errorf("%+v: error %v, want one naming %s", tt.p, err, tt.field)
		}
	}
}
