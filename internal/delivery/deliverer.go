// Package delivery runs the delivery engine: workers claim due deliveries of a target,
// hand them to the target's Deliverer, and record the outcome; the sweep catches up on
// expired leases, lost wake-ups and overdue receipts.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// Attempt is one try at delivering a message to a target.
type Attempt struct {
	Delivery persistence.Delivery
	Message  persistence.Message
	// Number counts attempts of this delivery, starting at 1.
	Number int
	// Open reads the document (payload stage unpacked).
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// Deliverer is what a target plugin instance implements.
type Deliverer interface {
	Deliver(ctx context.Context, a Attempt) Result
}

// Recoverer is implemented by a Deliverer that keeps its own retry schedule (the AS2
// sender follows the partner's profile and leaves its instance policy as a backstop).
// When Deliver panics, the engine hands it the panic as cause and records the Result it
// returns, so the attempt is retried on that schedule rather than the backstop's.
type Recoverer interface {
	Recovered(ctx context.Context, a Attempt, cause error) Result
}

// ErrorClass tells the retry policy what kind of failure it is deciding on.
type ErrorClass = retry.Class

const (
	ClassTransport = retry.ClassTransport
	ClassTimeout   = retry.ClassTimeout
	ClassThrottled = retry.ClassThrottled
	ClassHTTP4xx   = retry.ClassHTTP4xx
	ClassHTTP5xx   = retry.ClassHTTP5xx
	ClassRefused   = retry.ClassRefused
	ClassInternal  = retry.ClassInternal
)

// Result is a target's verdict on one attempt. Build it with Delivered, AwaitAck,
// Transient, Permanent or RetryAt.
type Result struct {
	Kind     persistence.OutcomeKind
	Deadline time.Time // AwaitAck
	// Ref is the target's reference for an AwaitAck (an in-house system's job id), which
	// the system's completion report may name; see persistence.CheckExternalRef.
	Ref   string
	At    time.Time // RetryAt: the target chose the time itself
	Class ErrorClass
	Err   error
	// Note is what the history records of a delivered or awaiting attempt besides its
	// state (the name a file was written under); see DeliveredNote.
	Note string
	// Payloads are stages the target stored for the message (a receipt), written with
	// storage.DeferSync: the engine makes them durable and records them with the outcome,
	// one flush and one commit for a whole batch.
	Payloads []persistence.Payload
	// Pause, when not empty, says the failure will repeat for every message to the
	// partner: the store pauses the partner with this reason in the outcome's
	// transaction (persistence.PartnerPause). Build it with Pausing.
	Pause string

	// Downstream is what the receiving side said in its answer (a synchronous MDN),
	// recorded with the outcome as downstream status lines.
	Downstream []persistence.DownstreamReport
}

// Delivered says the target has the message.
func Delivered() Result { return Result{Kind: persistence.OutcomeDelivered} }

// DeliveredNote says the target has the message, with a note for the delivery's history.
func DeliveredNote(note string) Result {
	return Result{Kind: persistence.OutcomeDelivered, Note: note}
}

// AwaitAck says the message went out and a receipt is due by deadline.
func AwaitAck(deadline time.Time) Result {
	return Result{Kind: persistence.OutcomeAwaitingAck, Deadline: deadline}
}

// Handoff says an in-house system accepted the message and reports its completion later,
// by deadline, naming ref (empty when it gave none); note goes to the history.
func Handoff(deadline time.Time, ref, note string) Result {
	return Result{Kind: persistence.OutcomeAwaitingAck, Deadline: deadline, Ref: ref, Note: note}
}

// Transient is a failure worth another try; the instance's retry policy decides when, or
// that the tries are used up.
func Transient(class ErrorClass, err error) Result {
	return Result{Kind: persistence.OutcomeRetry, Class: class, Err: err}
}

// RetryAt asks for another try at a time the target chose (e.g. a Retry-After header);
// the policy still decides whether tries are left.
func RetryAt(at time.Time, class ErrorClass, err error) Result {
	return Result{Kind: persistence.OutcomeRetry, At: at, Class: class, Err: err}
}

// Permanent is a failure another try cannot change by definition (a path that leaves its
// directory); anything a retry could sensibly fix is Transient, so an operator's rule
// for its class decides.
func Permanent(class ErrorClass, err error) Result {
	return Result{Kind: persistence.OutcomeFailed, Class: class, Err: err}
}

// Pausing is a failure the partner will repeat for every message (it cannot verify our
// signature, cannot decrypt, demands other security): the delivery fails and sending to
// the partner pauses, with pause as the reason, until an operator resumes it.
func Pausing(class ErrorClass, err error, pause string) Result {
	r := Permanent(class, err)
	r.Pause = pause
	return r
}

// TargetOptions are the settings every target instance has. Target config types embed it,
// so its fields sit at the top level of their JSON.
type TargetOptions struct {
	MaxConcurrent int         `json:"max_concurrent,omitempty"`
	Retry         RetryPolicy `json:"retry"`
	// AwaitCompletion, when positive, turns every delivered attempt into awaiting_ack
	// with this deadline: the in-house system that picks the document up reports its
	// completion through the REST API. Zero: off.
	AwaitCompletion Duration `json:"await_completion,omitempty"`
}

// MaxAwaitCompletion bounds how long a delivery may wait for a completion report.
const MaxAwaitCompletion = 30 * 24 * time.Hour

// DefaultMaxConcurrent is a target's attempts in flight when its config names none.
const DefaultMaxConcurrent = 16

// Options returns the options with defaults filled in.
func (o TargetOptions) Options() TargetOptions {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	o.Retry = o.Retry.WithDefaults()
	return o
}

// Validate checks the options.
func (o TargetOptions) Validate() error {
	if o.MaxConcurrent < 0 || o.MaxConcurrent > 256 {
		return fmt.Errorf("max_concurrent: must be between 1 and 256")
	}
	if err := o.Retry.Validate(); err != nil {
		return fmt.Errorf("retry.%w", err)
	}
	if o.AwaitCompletion < 0 || time.Duration(o.AwaitCompletion) > MaxAwaitCompletion {
		return fmt.Errorf("await_completion: must be between 0 (off) and %s", formatDays(MaxAwaitCompletion))
	}
	return nil
}

// formatDays writes a whole number of days as 720h would not read: "30 days".
func formatDays(d time.Duration) string { return fmt.Sprintf("%d days (%s)", d/(24*time.Hour), d) }

// awaitCompletion turns a delivered outcome into awaiting_ack when the instance waits for
// completion reports; other outcomes, and every outcome when it does not, pass unchanged.
func (o TargetOptions) awaitCompletion(c persistence.Completion, now time.Time) persistence.Completion {
	if o.AwaitCompletion <= 0 || c.Kind != persistence.OutcomeDelivered {
		return c
	}
	c.Kind = persistence.OutcomeAwaitingAck
	c.AckDeadline = now.Add(time.Duration(o.AwaitCompletion))
	return c
}

// CheckTargetOptions is Validate for a target config's Validate: its error is a
// *persistence.FieldError naming the option.
func CheckTargetOptions(o TargetOptions) error {
	var errs persistence.FieldErrors
	if o.MaxConcurrent < 0 || o.MaxConcurrent > 256 {
		errs.Add("max_concurrent", "must be between 1 and 256")
	}
	if err := persistence.CheckRetry("retry", o.Retry); err != nil && !errs.Merge(err) {
		return err
	}
	if o.AwaitCompletion < 0 || time.Duration(o.AwaitCompletion) > MaxAwaitCompletion {
		errs.Add("await_completion", "must be between 0 (off) and "+formatDays(MaxAwaitCompletion))
	}
	return errs.Err()
}

// TargetConfig is implemented by every target config through its embedded TargetOptions.
type TargetConfig interface {
	Options() TargetOptions
}

var errNoReason = errors.New("no reason given")
