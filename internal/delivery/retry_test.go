package delivery

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"wharf/internal/persistence"
)

func intp(n int) *int { return &n }

func floatp(f float64) *float64 { return &f }

func TestRetryPolicyDelay(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		p       RetryPolicy
		attempt int
		want    time.Duration
		ok      bool
	}{
		{"fixed", RetryPolicy{Strategy: RetryFixed, Base: Duration(5 * s), MaxRetries: intp(3)}, 2, 5 * s, true},
		{"linear", RetryPolicy{Strategy: RetryLinear, Base: Duration(5 * s), MaxRetries: intp(3)}, 3, 15 * s, true},
		{"exponential first", RetryPolicy{Strategy: RetryExponential, Base: Duration(s), MaxRetries: intp(10)}, 1, s, true},
		{"exponential fourth", RetryPolicy{Strategy: RetryExponential, Base: Duration(s), MaxRetries: intp(10)}, 4, 8 * s, true},
		{"capped", RetryPolicy{Strategy: RetryExponential, Base: Duration(s), MaxDelay: Duration(10 * s), MaxRetries: intp(100)}, 60, 10 * s, true},
		{"exhausted", RetryPolicy{Strategy: RetryFixed, Base: Duration(s), MaxRetries: intp(3)}, 4, 0, false},
		{"no retries", RetryPolicy{Strategy: RetryFixed, Base: Duration(s), MaxRetries: intp(0)}, 1, 0, false},
		{"defaults", RetryPolicy{}, 1, 30 * s, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.p.Delay(tt.attempt, nil)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Delay(%d) = %s, %v; want %s, %v", tt.attempt, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRetryJitterStaysInBounds(t *testing.T) {
	p := RetryPolicy{Strategy: RetryFixed, Base: Duration(10 * time.Second), MaxRetries: intp(5), Jitter: floatp(0.2)}
	rnd := rand.New(rand.NewPCG(1, 2))
	varied := false
	for i := 0; i < 200; i++ {
		d, ok := p.Delay(1, rnd)
		if !ok || d < 8*time.Second || d > 12*time.Second {
			t.Fatalf("jittered delay %s outside 8s..12s", d)
		}
		if d != 10*time.Second {
			varied = true
		}
	}
	if !varied {
		t.Error("jitter never changed the delay")
	}
}

// TestDefaultRetryJitter holds the default spread: a policy that names no jitter spreads
// every delay within ±20 % of its un-jittered value, the same seed draws the same delays,
// and an explicit 0 turns the spread off.
func TestDefaultRetryJitter(t *testing.T) {
	policies := []struct {
		name string
		p    RetryPolicy
	}{
		{"defaults", RetryPolicy{}},
		{"fixed", RetryPolicy{Strategy: RetryFixed, Base: Duration(10 * time.Second)}},
		{"linear", RetryPolicy{Strategy: RetryLinear, Base: Duration(10 * time.Second)}},
		{"capped exponential", RetryPolicy{Base: Duration(time.Minute), MaxDelay: Duration(5 * time.Minute)}},
	}
	for _, tt := range policies {
		t.Run(tt.name, func(t *testing.T) {
			a, b := rand.New(rand.NewPCG(7, 11)), rand.New(rand.NewPCG(7, 11))
			for attempt := 1; attempt <= DefaultMaxRetries; attempt++ {
				plain, _ := tt.p.Delay(attempt, nil)
				lo, hi := plain-plain/5, plain+plain/5
				varied := false
				for i := 0; i < 100; i++ {
					d, ok := tt.p.Delay(attempt, a)
					if !ok || d < lo || d > hi {
						t.Fatalf("attempt %d: delay %s outside %s..%s", attempt, d, lo, hi)
					}
					if again, _ := tt.p.Delay(attempt, b); again != d {
						t.Fatalf("attempt %d: same seed drew %s, then %s", attempt, d, again)
					}
					varied = varied || d != plain
				}
				if !varied {
					t.Fatalf("attempt %d: the default policy never spread the delay %s", attempt, plain)
				}
			}
		})
	}
	off := RetryPolicy{Strategy: RetryFixed, Base: Duration(10 * time.Second), Jitter: floatp(0)}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		if d, _ := off.Delay(1, rnd); d != 10*time.Second {
			t.Fatalf("jitter 0: delay %s, want exactly 10s", d)
		}
	}
}

// TestDecideKeepsNote: a delivered result's note (the name a file was written under) is
// the reason its history records.
func TestDecideKeepsNote(t *testing.T) {
	c := decide(DeliveredNote("written as acme/order-1.edi"), RetryPolicy{}, 1, time.Now(), nil)
	if c.Kind != persistence.OutcomeDelivered || c.Reason != "written as acme/order-1.edi" {
		t.Fatalf("decide = %+v", c)
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	tests := []struct {
		p  RetryPolicy
		ok bool
	}{
		{RetryPolicy{}, true},
		{RetryPolicy{Strategy: "sometimes"}, false},
		{RetryPolicy{MaxRetries: intp(-1)}, false},
		{RetryPolicy{Jitter: floatp(1.5)}, false},
		{RetryPolicy{Jitter: floatp(-0.1)}, false},
		{RetryPolicy{Jitter: floatp(0)}, true},
		{RetryPolicy{Base: Duration(time.Hour), MaxDelay: Duration(time.Minute)}, false},
	}
	for _, tt := range tests {
		if err := tt.p.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tt.p, err, tt.ok)
		}
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := RetryPolicy{Strategy: RetryFixed, Base: Duration(time.Minute), MaxRetries: intp(2)}
	boom := errors.New("connection refused")
	tests := []struct {
		name     string
		r        Result
		attempt  int
		kind     persistence.OutcomeKind
		next     time.Time
		deadline time.Time
	}{
		{"delivered", Delivered(), 1, persistence.OutcomeDelivered, time.Time{}, time.Time{}},
		{"await ack", AwaitAck(now.Add(time.Hour)), 1, persistence.OutcomeAwaitingAck, time.Time{}, now.Add(time.Hour)},
		{"transient", Transient(ClassTransport, boom), 1, persistence.OutcomeRetry, now.Add(time.Minute), time.Time{}},
		{"retry-after later than policy", RetryAt(now.Add(time.Hour), ClassHTTP5xx, boom), 1, persistence.OutcomeRetry, now.Add(time.Hour), time.Time{}},
		{"exhausted", Transient(ClassTransport, boom), 3, persistence.OutcomeFailed, time.Time{}, time.Time{}},
		{"permanent", Permanent(boom), 1, persistence.OutcomeFailed, time.Time{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := decide(tt.r, p, tt.attempt, now, nil)
			if c.Kind != tt.kind || !c.NextAttemptAt.Equal(tt.next) || !c.AckDeadline.Equal(tt.deadline) {
				t.Errorf("decide = %+v", c)
			}
			if tt.r.Err != nil && c.Reason == "" {
				t.Error("a failure lost its reason")
			}
		})
	}
}
