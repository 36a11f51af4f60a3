package delivery

import (
	"errors"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

func intp(n int) *int { return &n }

// TestDecideKeepsNote: a delivered result's note (the name a file was written under) is
// the reason its history records.
func TestDecideKeepsNote(t *testing.T) {
	c := decide(DeliveredNote("written as acme/order-1.edi"), RetryPolicy{}, nil, 1, time.Now(), nil)
	if c.Kind != persistence.OutcomeDelivered || c.Reason != "written as acme/order-1.edi" {
		t.Fatalf("decide = %+v", c)
	}
}

// TestDecideKeepsPause: a failure that pauses its partner says so in the completion the
// store applies.
func TestDecideKeepsPause(t *testing.T) {
	c := decide(Pausing(ClassRefused, errors.New("negative MDN"), "authentication-failed"), RetryPolicy{}, nil, 1, time.Now(), nil)
	if c.Kind != persistence.OutcomeFailed || c.Pause != "authentication-failed" || c.Reason != "negative MDN" {
		t.Fatalf("decide = %+v", c)
	}
	if c := decide(Permanent(ClassRefused, errors.New("negative MDN")), RetryPolicy{}, nil, 1, time.Now(), nil); c.Pause != "" {
		t.Fatalf("a plain failure pauses: %+v", c)
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
		{"permanent", Permanent(ClassInternal, boom), 1, persistence.OutcomeFailed, time.Time{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := decide(tt.r, p, nil, tt.attempt, now, nil)
			if c.Kind != tt.kind || !c.NextAttemptAt.Equal(tt.next) || !c.AckDeadline.Equal(tt.deadline) {
				t.Errorf("decide = %+v", c)
			}
			if tt.r.Err != nil && c.Reason == "" {
				t.Error("a failure lost its reason")
			}
		})
	}
}

// TestDecideHistoryLine holds what the history of a retry and of a failure says: the
// failure, the retry's number of the rule's retries, the delay, and the policy, rule and
// strategy that decided; the failure's class goes with the completion.
func TestDecideHistoryLine(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	target := RetryPolicy{Jitter: new(float64), Rules: retry.Rules{
		HTTP5xx: &RetryRule{Strategy: RetryExponential, Base: Duration(5 * time.Second), MaxRetries: intp(8)}}}
	route := &RetryPolicy{Rules: retry.Rules{
		HTTP5xx: &RetryRule{Strategy: RetryExponential, Base: Duration(10 * time.Second), MaxRetries: intp(8)}}}
	unavailable := Transient(ClassHTTP5xx, HTTPStatusError(503))
	tests := []struct {
		name    string
		r       Result
		route   *RetryPolicy
		attempt int
		kind    persistence.OutcomeKind
		reason  string
		next    time.Duration
	}{
		{"route rule", unavailable, route, 3, persistence.OutcomeRetry,
			"HTTP 503 Service Unavailable — retry 3 of 8 in 40s (route policy, rule http_5xx, exponential)", 40 * time.Second},
		{"target rule", unavailable, nil, 3, persistence.OutcomeRetry,
			"HTTP 503 Service Unavailable — retry 3 of 8 in 20s (target policy, rule http_5xx, exponential)", 20 * time.Second},
		{"retry-after", RetryAt(now.Add(time.Hour), ClassThrottled, HTTPStatusError(429)), nil, 1, persistence.OutcomeRetry,
			"HTTP 429 Too Many Requests — retry 1 of 10 in 1h0m0s, as the receiver asked (target policy, default, exponential)", time.Hour},
		{"gave up", unavailable, route, 9, persistence.OutcomeFailed,
			"HTTP 503 Service Unavailable — retries exhausted after 9 attempts (route policy, rule http_5xx, exponential)", 0},
		{"never", Transient(ClassHTTP4xx, HTTPStatusError(404)), nil, 1, persistence.OutcomeFailed,
			"HTTP 404 Not Found — not retried (built-in rule http_4xx: never)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := decide(tt.r, target, tt.route, tt.attempt, now, nil)
			if c.Kind != tt.kind || c.Reason != tt.reason {
				t.Fatalf("decide = %s %q\nwant %s %q", c.Kind, c.Reason, tt.kind, tt.reason)
			}
			if c.ErrorClass != string(tt.r.Class) {
				t.Errorf("error class %q, want %q", c.ErrorClass, tt.r.Class)
			}
			if tt.next != 0 && !c.NextAttemptAt.Equal(now.Add(tt.next)) {
				t.Errorf("next attempt %v, want %v", c.NextAttemptAt, now.Add(tt.next))
			}
		})
	}
}
