package loadtest

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// as2Kills is an AS2 run's kill plan across its rounds: which instance is killed, and
// how many files earlier rounds brought to B's inbox (the plan counts the whole run).
type as2Kills struct {
	plan   *crashPlan
	victim *as2Peer
	before int
}

// killRetry is each side's retry policy of the other in a kill run: a message whose
// attempt met the kill is sent again a second later, under the same Message-ID, so the
// figures tell how fast the gateways recover rather than the default back-off.
var killRetry = map[string]any{"strategy": "fixed", "base": "1s", "max_delay": "1s", "max_retries": 1000}

// recoverFast prepares both instances for kills: short retries of each other, and
// short leases with a quick sweep, as the files run sets them, so work a killed process
// held is taken again within seconds of its restart.
func recoverFast(ctx context.Context, a, b *as2Peer) error {
	for _, pair := range [][2]*as2Peer{{a, b}, {b, a}} {
		self, other := pair[0], pair[1]
		err := changeRemoteProfile(ctx, self, other, func(cur map[string]any) { cur["retry"] = killRetry })
		if err != nil {
			return fmt.Errorf("%s: retry policy: %w", self.as2ID, err)
		}
		if err := self.shortLeases(ctx); err != nil {
			return fmt.Errorf("%s: %w", self.as2ID, err)
		}
	}
	return nil
}

// usage is a finished process's CPU time and peak RSS in bytes.
func usage(st *os.ProcessState) (time.Duration, int64) {
	if st == nil {
		return 0, 0
	}
	var peak int64
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss << 10
	}
	return st.UserTime() + st.SystemTime(), peak
}
