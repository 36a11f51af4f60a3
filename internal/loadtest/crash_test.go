package loadtest

import (
	"io"
	"testing"
	"time"
)

func TestNewCrashPlan(t *testing.T) {
	tests := []struct {
		every, times int
		want         *crashPlan
		err          bool
	}{
		{every: 0, times: 0},
		{every: 0, times: 1},
		{every: 0, times: 2, err: true},
		{every: -1, times: 1, err: true},
		{every: 5, times: -1, err: true},
		{every: 5, times: 0, want: &crashPlan{every: 5, times: 1}},
		{every: 5, times: 3, want: &crashPlan{every: 5, times: 3}},
	}
	for _, tt := range tests {
		got, err := newCrashPlan(tt.every, tt.times, "B", io.Discard)
		if (err != nil) != tt.err {
			t.Errorf("newCrashPlan(%d, %d): error %v, want error %t", tt.every, tt.times, err, tt.err)
			continue
		}
		switch {
		case tt.want == nil && got != nil:
			t.Errorf("newCrashPlan(%d, %d) = %+v, want no plan", tt.every, tt.times, got)
		case tt.want != nil && (got == nil || got.every != tt.want.every || got.times != tt.want.times):
			t.Errorf("newCrashPlan(%d, %d) = %+v, want every %d, times %d", tt.every, tt.times, got, tt.want.every, tt.want.times)
		}
	}
}

// A kill is due every `every` arrivals, never while the previous one has not recovered,
// and its recovery ends with the first document written after the restart.
func TestCrashPlanBookkeeping(t *testing.T) {
	var none *crashPlan
	if none.due(100) || none.recovering() {
		t.Fatal("no plan: nothing is due")
	}
	if got, err := none.done(); got != nil || err != nil {
		t.Fatalf("no plan: done() = %v, %v", got, err)
	}

	c, err := newCrashPlan(10, 2, "B", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.due(9) || !c.due(10) {
		t.Fatal("the first kill is due at 10 arrivals")
	}
	// What crash records, without a process to kill.
	kill := time.Unix(1000, 0)
	c.crashes = append(c.crashes, Crash{Arrived: 12, Restart: 300 * time.Millisecond})
	c.killedAt, c.restartedAt = kill, kill.Add(300*time.Millisecond)
	if c.due(25) {
		t.Fatal("a kill is due before the previous one recovered")
	}
	c.arrived(kill.Add(-time.Millisecond))      // written before the kill
	c.arrived(kill.Add(100 * time.Millisecond)) // written before the restart
	if !c.recovering() {
		t.Fatal("a document written before the restart ended the recovery")
	}
	c.arrived(kill.Add(time.Second))
	if c.recovering() || c.crashes[0].Recover != time.Second {
		t.Fatalf("recovery %s, want 1s", c.crashes[0].Recover)
	}
	if c.due(19) || !c.due(20) {
		t.Fatal("the second kill is due at 20 arrivals")
	}
	if _, err := c.done(); err == nil {
		t.Fatal("done() with one of two kills made: want an error")
	}
	c.crashes = append(c.crashes, Crash{Arrived: 20})
	c.killedAt, c.restartedAt = kill, kill
	if _, err := c.done(); err == nil {
		t.Fatal("done() while the last kill has not recovered: want an error")
	}
	c.arrived(kill.Add(time.Second))
	if got, err := c.done(); err != nil || len(got) != 2 {
		t.Fatalf("done() = %v, %v; want both kills", got, err)
	}
	if c.due(1000) {
		t.Fatal("a kill is due after the planned ones")
	}
}

func TestCrashCatchUp(t *testing.T) {
	kill := time.Unix(1000, 0)
	c := Crash{At: kill}
	docs := []struct{ dropped, arrived time.Duration }{
		{-5 * time.Second, -4 * time.Second}, // in before the kill
		{-3 * time.Second, 2 * time.Second},  // interrupted
		{-2 * time.Second, 40 * time.Second}, // interrupted, the slowest
		{time.Second, 50 * time.Second},      // dropped after the kill
	}
	for _, d := range docs {
		c.catchUp(kill.Add(d.dropped), kill.Add(d.arrived))
	}
	if c.CaughtUp != 40*time.Second {
		t.Errorf("caught up after %s, want 40s", c.CaughtUp)
	}
}
