package throttle

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestDelayGrowsAndCaps(t *testing.T) {
	l := New(Config{Free: 3, Base: time.Second, Max: 15 * time.Minute})
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{1, 0},
		{2, 0},
		{3, 0},
		{4, 1 * time.Second},
		{5, 2 * time.Second},
		{6, 4 * time.Second},
		{13, 512 * time.Second},
		{14, 15 * time.Minute},
		{20, 15 * time.Minute},
		{200, 15 * time.Minute},
	}
	now := t0
	failures := 0
	for _, tt := range tests {
		for failures < tt.failures {
			l.Fail("alice", now)
			failures++
		}
		if got := l.Check("alice", now); got != tt.want {
			t.Fatalf("after %d failures Check = %v, want %v", tt.failures, got, tt.want)
		}
	}
	// The wait runs down with the clock and is never permanent.
	if got := l.Check("alice", now.Add(10*time.Minute)); got != 5*time.Minute {
		t.Fatalf("ten minutes later Check = %v, want 5m", got)
	}
	if got := l.Check("alice", now.Add(15*time.Minute)); got != 0 {
		t.Fatalf("at the cap Check = %v, want 0", got)
	}
}

func TestSucceedResets(t *testing.T) {
	l := New(Config{Free: 1})
	l.Fail("alice", t0)
	l.Fail("alice", t0)
	l.Fail("bob", t0)
	l.Fail("bob", t0)
	if l.Check("alice", t0) == 0 {
		t.Fatal("no delay after failures")
	}
	l.Succeed("alice")
	if got := l.Check("alice", t0); got != 0 {
		t.Fatalf("after success Check = %v", got)
	}
	if l.Check("bob", t0) == 0 {
		t.Fatal("success for alice reset bob")
	}
	l.Fail("alice", t0)
	if got := l.Check("alice", t0); got != 0 {
		t.Fatalf("first failure after reset delayed %v", got)
	}
	l.Succeed("nobody")
}

func TestKeysExpire(t *testing.T) {
	l := New(Config{Free: 1, Max: time.Minute, Forget: time.Hour})
	for range 5 {
		l.Fail("old", t0)
	}
	l.Fail("new", t0.Add(50*time.Minute))
	if l.Check("old", t0.Add(59*time.Minute)) != 0 {
		// Past the one-minute cap already.
		t.Fatal("wait outlived the cap")
	}
	if l.Len() != 2 {
		t.Fatalf("Len = %d before expiry", l.Len())
	}
	// A failure after the idle period sweeps the old key.
	l.Fail("other", t0.Add(61*time.Minute))
	if l.Len() != 2 {
		t.Fatalf("Len = %d after expiry, want 2", l.Len())
	}
	// An expired key starts over: one failure is free again.
	l.Fail("new", t0.Add(50*time.Minute+time.Hour))
	if got := l.Check("new", t0.Add(50*time.Minute+time.Hour)); got != 0 {
		t.Fatalf("expired key kept its count: wait %v", got)
	}
}

func TestCheckDropsExpiredKey(t *testing.T) {
	l := New(Config{Forget: time.Hour, Max: time.Minute})
	l.Fail("k", t0)
	if got := l.Check("k", t0.Add(2*time.Hour)); got != 0 || l.Len() != 0 {
		t.Fatalf("Check = %v, Len = %d", got, l.Len())
	}
}

func TestKeyCap(t *testing.T) {
	l := New(Config{Free: 1, MaxKeys: 100})
	for i := range 1000 {
		l.Fail(fmt.Sprintf("addr-%d", i), t0.Add(time.Duration(i)*time.Millisecond))
		if l.Len() > 100 {
			t.Fatalf("Len = %d after %d keys", l.Len(), i+1)
		}
	}
	// The oldest were evicted, the newest kept.
	l.Fail("addr-999", t0.Add(time.Second))
	if l.Check("addr-999", t0.Add(time.Second)) == 0 {
		t.Fatal("newest key lost its count")
	}
	l.Fail("addr-0", t0.Add(time.Second))
	if l.Check("addr-0", t0.Add(time.Second)) != 0 {
		t.Fatal("oldest key was not evicted")
	}
}

func TestRecentFailureProtectsFromEviction(t *testing.T) {
	l := New(Config{Free: 1, MaxKeys: 3})
	l.Fail("victim", t0)
	l.Fail("a", t0.Add(1))
	l.Fail("b", t0.Add(2))
	l.Fail("victim", t0.Add(3)) // victim is now the most recent
	l.Fail("c", t0.Add(4))      // evicts a
	if l.Check("victim", t0.Add(4)) == 0 {
		t.Fatal("recently failed key was evicted")
	}
}

func TestDefaults(t *testing.T) {
	l := New(Config{})
	want := Config{Free: 3, Base: time.Second, Max: 15 * time.Minute, Forget: 24 * time.Hour, MaxKeys: 100_000}
	if l.cfg != want {
		t.Fatalf("defaults %+v, want %+v", l.cfg, want)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		wait time.Duration
		want int
	}{
		{0, 0},
		{-time.Second, 0},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{15 * time.Minute, 900},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.wait); got != tt.want {
			t.Errorf("RetryAfter(%v) = %d, want %d", tt.wait, got, tt.want)
		}
	}
}
