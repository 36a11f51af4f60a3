package receiver

import (
	"sync"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
)

// countingMetrics records what a receiver reports: refusals in order and the requests
// in progress.
type countingMetrics struct {
	mu       sync.Mutex
	refusals []string
	inFlight int
}

func (c *countingMetrics) Began(protocol string, instance persistence.InstanceName) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.inFlight--
			c.mu.Unlock()
		})
	}
}

func (c *countingMetrics) Refused(protocol string, instance persistence.InstanceName, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refusals = append(c.refusals, protocol+" "+string(instance)+" "+reason)
}

// last is the newest refusal, "" when none was counted.
func (c *countingMetrics) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.refusals) == 0 {
		return ""
	}
	return c.refusals[len(c.refusals)-1]
}

// inFlightNow is how many requests began and are not done.
func (c *countingMetrics) inFlightNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight
}

func TestDispositionRefusal(t *testing.T) {
	for _, tt := range []struct {
		disp mime.Disposition
		want string
	}{
		{failureDisposition(errReplay, nil), "duplicate-document"},
		{mime.ProcessedWith("error", "decryption-failed"), "decryption-failed"},
		{mime.Processed(), unexpectedFailure},
	} {
		if got := dispositionRefusal(tt.disp); got != tt.want {
			t.Errorf("dispositionRefusal(%s) = %q, want %q", tt.disp, got, tt.want)
		}
	}
}
