package httptarget

import (
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// MaxTimeout bounds one attempt of a sender.
const MaxTimeout = 5 * time.Minute

// CheckSender adds to errs what every target that POSTs rows of its own queue (the
// notifier, the event webhooks) refuses: its target options, with no await_completion
// (nobody reports the completion of what it sends; what names the target in that
// refusal), its URL (rebind is the write-only field a URL of another origin needs again)
// and its timeout. An error it returns is not a field's and ends the check.
func CheckSender(errs *persistence.FieldErrors, o delivery.TargetOptions, url string, timeout delivery.Duration, what, rebind string) error {
	if err := delivery.CheckTargetOptions(o); !errs.Merge(err) {
		return err
	}
	if o.AwaitCompletion != 0 {
		return &persistence.FieldError{Field: "await_completion", Message: what + " does not wait for completion reports; leave it empty"}
	}
	if err := CheckURL(url, rebind); err != nil {
		errs.Add("url", err.Error())
	}
	if timeout <= 0 || time.Duration(timeout) > MaxTimeout {
		errs.Add("timeout", "must be between 1ms and 5m")
	}
	return nil
}
