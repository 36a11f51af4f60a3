package eventhook

import (
	"fmt"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/events"
	"wharf/internal/httptarget"
	"wharf/internal/persistence"
	"wharf/internal/stdwebhook"
)

// Config is an event-webhook subscription.
type Config struct {
	delivery.TargetOptions
	// URL receives the POSTs. Write-only: a webhook URL often carries its credential.
	URL string `json:"url"`
	// Secret keys the Standard Webhooks signature, in the whsec_ form; write-only. The
	// module generates it (POST /api/v1/event-webhooks, …/secret) and shows it once.
	Secret string `json:"secret"`
	// PreviousSecret also signs until PreviousSecretUntil, so a receiver can switch to a
	// rotated secret at its own pace; write-only.
	PreviousSecret      string     `json:"previous_secret,omitempty"`
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
	// Events are the event types and wildcards sent.
	Events []events.Pattern `json:"events"`
	// Party, when set, sends only events of messages from or to it.
	Party persistence.PartyName `json:"party,omitempty"`
	// DisableAfter disables the subscription when its endpoint has failed for this long
	// without one success in between; an operator enables it again.
	DisableAfter delivery.Duration `json:"disable_after"`
	// Timeout bounds one attempt.
	Timeout delivery.Duration `json:"timeout"`
}

// Defaults and limits of a subscription.
const (
	DefaultDisableAfter = 24 * time.Hour
	MinDisableAfter     = time.Minute
	MaxDisableAfter     = 30 * 24 * time.Hour
	DefaultTimeout      = 10 * time.Second
	// RotationOverlap is how long the previous secret keeps signing after a rotation.
	RotationOverlap = 24 * time.Hour
	maxSecretLength = 512
	maxPatterns     = 64
)

// NewConfig returns a config with its defaults set.
func NewConfig() *Config {
	n := 10
	return &Config{
		TargetOptions: delivery.TargetOptions{MaxConcurrent: 1, Retry: delivery.RetryPolicy{
			Base: delivery.Duration(10 * time.Second), MaxDelay: delivery.Duration(time.Hour), MaxRetries: &n,
		}},
		Events:       []events.Pattern{events.All},
		DisableAfter: delivery.Duration(DefaultDisableAfter),
		Timeout:      delivery.Duration(DefaultTimeout),
	}
}

// WriteOnlyFields names the fields sealed at rest and never returned.
func (c *Config) WriteOnlyFields() []string { return []string{"url", "secret", "previous_secret"} }

// SecretDestination is where signatures made with the secret go: a URL of another origin
// needs the secret entered (or generated) again.
func (c *Config) SecretDestination() string { return c.URL }

// Validate checks the config; errors are *persistence.FieldError and never repeat the
// URL or a secret.
func (c *Config) Validate() error {
	var errs persistence.FieldErrors
	if err := httptarget.CheckSender(&errs, c.TargetOptions, c.URL, c.Timeout, "an event webhook", "secret"); err != nil {
		return err
	}
	checkSecret(&errs, "secret", c.Secret, true)
	checkSecret(&errs, "previous_secret", c.PreviousSecret, false)
	if len(c.Events) == 0 {
		errs.Add("events", "name at least one event type (or * for all)")
	}
	if len(c.Events) > maxPatterns {
		errs.Add("events", fmt.Sprintf("at most %d entries", maxPatterns))
	}
	for _, p := range c.Events {
		if _, err := events.ParsePattern(string(p)); err != nil {
			errs.Add("events", err.Error())
		}
	}
	if c.Party != "" {
		if _, err := persistence.ParsePartyName(string(c.Party)); err != nil {
			errs.Add("party", err.Error())
		}
	}
	if d := time.Duration(c.DisableAfter); d < MinDisableAfter || d > MaxDisableAfter {
		errs.Add("disable_after", fmt.Sprintf("must be between %s and %s", MinDisableAfter, MaxDisableAfter))
	}
	return errs.Err()
}

func checkSecret(errs *persistence.FieldErrors, field, s string, required bool) {
	switch {
	case s == "" && required:
		errs.Add(field, "required: generate one with POST /api/v1/event-webhooks or POST /api/v1/event-webhooks/{name}/secret")
	case s == "":
	case len(s) > maxSecretLength:
		errs.Add(field, fmt.Sprintf("longer than %d bytes", maxSecretLength))
	default:
		if _, err := stdwebhook.Key(s); err != nil {
			errs.Add(field, err.Error())
		}
	}
}

// keys are the HMAC keys a request is signed with at now: the secret, and the previous
// one while its overlap lasts.
func (c *Config) keys(now time.Time) ([][]byte, error) {
	key, err := stdwebhook.Key(c.Secret)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	keys := [][]byte{key}
	if c.PreviousSecret != "" && c.PreviousSecretUntil != nil && now.Before(*c.PreviousSecretUntil) {
		prev, err := stdwebhook.Key(c.PreviousSecret)
		if err != nil {
			return nil, fmt.Errorf("previous_secret: %w", err)
		}
		keys = append(keys, prev)
	}
	return keys, nil
}

// selects reports whether the subscription sends e.
func (c *Config) selects(e events.Event) bool { return events.Selects(c.Events, c.Party, e) }
