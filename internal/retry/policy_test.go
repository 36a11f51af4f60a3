package retry

import (
	"math/rand/v2"
	"testing"
	"time"
)

func intp(n int) *int { return &n }

func floatp(f float64) *float64 { return &f }

func TestPolicyDelay(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		p       Policy
		attempt int
		want    time.Duration
		ok      bool
	}{
		{"fixed", Policy{Strategy: Fixed, Base: Duration(5 * s), MaxRetries: intp(3)}, 2, 5 * s, true},
		{"linear", Policy{Strategy: Linear, Base: Duration(5 * s), MaxRetries: intp(3)}, 3, 15 * s, true},
		{"exponential first", Policy{Strategy: Exponential, Base: Duration(s), MaxRetries: intp(10)}, 1, s, true},
		{"exponential fourth", Policy{Strategy: Exponential, Base: Duration(s), MaxRetries: intp(10)}, 4, 8 * s, true},
		{"capped", Policy{Strategy: Exponential, Base: Duration(s), MaxDelay: Duration(10 * s), MaxRetries: intp(100)}, 60, 10 * s, true},
		{"exhausted", Policy{Strategy: Fixed, Base: Duration(s), MaxRetries: intp(3)}, 4, 0, false},
		{"no retries", Policy{Strategy: Fixed, Base: Duration(s), MaxRetries: intp(0)}, 1, 0, false},
		{"defaults", Policy{}, 1, 30 * s, true},
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
	p := Policy{Strategy: Fixed, Base: Duration(10 * time.Second), MaxRetries: intp(5), Jitter: floatp(0.2)}
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
		p    Policy
	}{
		{"defaults", Policy{}},
		{"fixed", Policy{Strategy: Fixed, Base: Duration(10 * time.Second)}},
		{"linear", Policy{Strategy: Linear, Base: Duration(10 * time.Second)}},
		{"capped exponential", Policy{Base: Duration(time.Minute), MaxDelay: Duration(5 * time.Minute)}},
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
	off := Policy{Strategy: Fixed, Base: Duration(10 * time.Second), Jitter: floatp(0)}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		if d, _ := off.Delay(1, rnd); d != 10*time.Second {
			t.Fatalf("jitter 0: delay %s, want exactly 10s", d)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		p  Policy
		ok bool
	}{
		{Policy{}, true},
		{Policy{Strategy: "sometimes"}, false},
		{Policy{MaxRetries: intp(-1)}, false},
		{Policy{Jitter: floatp(1.5)}, false},
		{Policy{Jitter: floatp(-0.1)}, false},
		{Policy{Jitter: floatp(0)}, true},
		{Policy{Base: Duration(time.Hour), MaxDelay: Duration(time.Minute)}, false},
	}
	for _, tt := range tests {
		if err := tt.p.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tt.p, err, tt.ok)
		}
	}
}
