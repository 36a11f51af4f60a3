package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Crash is one SIGKILL of a gateway during a run and what followed it.
type Crash struct {
	// At is when the process was killed.
	At time.Time
	// Arrived is how many documents had arrived when the process was killed.
	Arrived int
	// Restart is the time from the kill until the new process answered /healthz.
	Restart time.Duration
	// Recover is the time from the kill until the first document written after the
	// restart arrived: the whole outage as the receiving side sees it. (A document
	// written between the kill and the restart is left out: when the sender is killed,
	// the receiver still writes what it had taken.)
	Recover time.Duration
	// CaughtUp is the time from the kill until the last document dropped before it
	// arrived: how long the slowest message the kill interrupted took.
	CaughtUp time.Duration
}

// catchUp takes one document's drop and arrival times into CaughtUp.
func (c *Crash) catchUp(dropped, arrived time.Time) {
	if dropped.Before(c.At) && arrived.Sub(c.At) > c.CaughtUp {
		c.CaughtUp = arrived.Sub(c.At)
	}
}

// crashPlan kills one gateway with SIGKILL each time every more documents have arrived,
// times kills in all, and starts it again on the same data directory and ports. A kill
// waits until the previous one has recovered, so each restart is measured on its own.
type crashPlan struct {
	every, times int
	// name is how the progress lines call the process killed.
	name     string
	progress io.Writer
	crashes  []Crash
	// killedAt and restartedAt are the times of the last kill and restart while no
	// document written after the restart has arrived.
	killedAt, restartedAt time.Time
}

// newCrashPlan plans times kills, every arrivals apart; nil when every is zero.
func newCrashPlan(every, times int, name string, progress io.Writer) (*crashPlan, error) {
	if every < 0 || times < 0 {
		return nil, errors.New("loadtest: -kill-after and -kills must not be negative")
	}
	if every == 0 {
		if times > 1 {
			return nil, errors.New("loadtest: -kills needs -kill-after")
		}
		return nil, nil
	}
	return &crashPlan{every: every, times: max(times, 1), name: name, progress: progress}, nil
}

// due tells whether the next kill is due once arrived documents have arrived.
func (c *crashPlan) due(arrived int) bool {
	return c != nil && len(c.crashes) < c.times && c.killedAt.IsZero() && arrived >= c.every*(len(c.crashes)+1)
}

// recovering tells whether a kill still waits for the next arrival.
func (c *crashPlan) recovering() bool { return c != nil && !c.killedAt.IsZero() }

// arrived notes that a document arrived at that time (its file's modification time);
// the first written after a restart ends that kill's recovery.
func (c *crashPlan) arrived(at time.Time) {
	if !c.recovering() || !at.After(c.restartedAt) {
		return
	}
	c.crashes[len(c.crashes)-1].Recover = at.Sub(c.killedAt)
	c.killedAt, c.restartedAt = time.Time{}, time.Time{}
}

// crash kills in with SIGKILL, hands its final state to dead (for its CPU time and
// peak memory) and starts it again.
func (c *crashPlan) crash(ctx context.Context, in *Instance, arrived int, dead func(*os.ProcessState)) error {
	fmt.Fprintf(c.progress, "killing %s (SIGKILL %d of %d) after %d arrived documents\n", c.name, len(c.crashes)+1, c.times, arrived)
	in.Kill()
	killedAt := time.Now()
	if dead != nil {
		dead(in.state)
	}
	if err := in.Start(ctx); err != nil {
		return fmt.Errorf("restart %s after SIGKILL %d: %w", c.name, len(c.crashes)+1, err)
	}
	c.restartedAt = time.Now()
	c.crashes = append(c.crashes, Crash{At: killedAt, Arrived: arrived, Restart: c.restartedAt.Sub(killedAt)})
	c.killedAt = killedAt
	return nil
}

// done returns the kills made, and an error when fewer than planned were made or the
// last one never saw a document arrive after it.
func (c *crashPlan) done() ([]Crash, error) {
	if c == nil {
		return nil, nil
	}
	if len(c.crashes) < c.times {
		return c.crashes, fmt.Errorf("the run ended after %d of %d planned kills: -kill-after × -kills must stay below the documents sent", len(c.crashes), c.times)
	}
	if c.recovering() {
		return c.crashes, fmt.Errorf("no document arrived after the last restart of %s: -kill-after × -kills must stay below the documents sent", c.name)
	}
	return c.crashes, nil
}
