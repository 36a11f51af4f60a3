package delivery

import (
	"time"

	"wharf/internal/persistence"
)

// Metrics hears what the engine's workers do, for the process's metrics. Its methods
// run on the workers' goroutines and must not block.
type Metrics interface {
	// Woken counts a wake-up a target's worker heard.
	Woken(target persistence.InstanceName)
	// AttemptDone times one attempt, with what became of it: the outcome recorded
	// (delivered, awaiting_ack, retry, failed), or AttemptLost / AttemptInterrupted.
	AttemptDone(target persistence.InstanceName, outcome string, d time.Duration)
	// ClaimLost counts a claim a worker found taken from it (its lease ran out and
	// another worker or the sweep took the delivery): the outcome is dropped.
	ClaimLost(target persistence.InstanceName)
}

// Outcomes of AttemptDone besides the recorded ones.
const (
	// AttemptLost is an attempt whose claim was lost while it ran.
	AttemptLost = "claim_lost"
	// AttemptInterrupted is an attempt shutdown interrupted; its delivery is released.
	AttemptInterrupted = "interrupted"
)

// SweepMetrics hears what each sweep pass did.
type SweepMetrics interface {
	// LeaseExpired counts a delivery whose lease ran out and that the sweep made due.
	LeaseExpired(target persistence.InstanceName)
	// Swept reports a finished pass.
	Swept(r SweepReport)
}

// SweepReport is one sweep pass: when it ran, how long it took, and the rows it touched
// of each kind.
type SweepReport struct {
	At            time.Time
	Duration      time.Duration
	ExpiredLeases int
	Woken         int
	Stalled       int
	ExpiredAcks   int
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) Woken(persistence.InstanceName)                              {}
func (noMetrics) AttemptDone(persistence.InstanceName, string, time.Duration) {}
func (noMetrics) ClaimLost(persistence.InstanceName)                          {}
func (noMetrics) LeaseExpired(persistence.InstanceName)                       {}
func (noMetrics) Swept(SweepReport)                                           {}

var (
	_ Metrics      = noMetrics{}
	_ SweepMetrics = noMetrics{}
)
