package notification

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"wharf/internal/alert"
	"wharf/internal/delivery"
	"wharf/internal/httptarget"
	"wharf/internal/persistence"
	"wharf/internal/stdwebhook"
)

// Format is the body a notifier sends, chosen for what the receiver understands.
type Format string

const (
	FormatGeneric    Format = "generic"
	FormatSlack      Format = "slack"
	FormatTeams      Format = "teams"
	FormatDiscord    Format = "discord"
	FormatGoogleChat Format = "googlechat"
	FormatNtfy       Format = "ntfy"
)

// AllFormats lists the formats.
var AllFormats = []Format{FormatGeneric, FormatSlack, FormatTeams, FormatDiscord, FormatGoogleChat, FormatNtfy}

// ParseFormat parses a format name.
func ParseFormat(s string) (Format, error) {
	if i := slices.Index(AllFormats, Format(s)); i >= 0 {
		return AllFormats[i], nil
	}
	return "", fmt.Errorf("invalid format %q: want generic, slack, teams, discord, googlechat or ntfy", s)
}

func (f *Format) UnmarshalText(b []byte) error {
	v, err := ParseFormat(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// Signed reports whether the format carries the signature headers: the generic format,
// whose receivers are written to verify them, and ntfy, which passes headers through.
// Chat services accept only their own body and ignore them.
func (f Format) Signed() bool { return f == FormatGeneric || f == FormatNtfy }

// Config is a notification-webhook instance's configuration.
type Config struct {
	delivery.TargetOptions
	// URL receives the POST. Write-only: a chat webhook's URL is its credential.
	URL string `json:"url"`
	// Format of the body.
	Format Format `json:"format"`
	// Headers are extra request headers (an Authorization); write-only.
	Headers map[string]string `json:"headers,omitempty"`
	// SigningSecret keys the HMAC-SHA256 signature (Standard Webhooks); write-only. A
	// "whsec_" prefix marks a base64 secret as Standard Webhooks libraries make them.
	SigningSecret string `json:"signing_secret,omitempty"`
	// MinSeverity drops alerts below it.
	MinSeverity alert.Severity `json:"min_severity"`
	// Codes, when not empty, are the only alert codes sent.
	Codes []alert.Code `json:"codes,omitempty"`
	// Cooldown drops an alert whose dedupe key was notified within it.
	Cooldown delivery.Duration `json:"cooldown"`
	// RateLimit alerts are sent per RateWindow; the rest are held and summed up in one
	// summary alert once the window has passed.
	RateLimit  int               `json:"rate_limit"`
	RateWindow delivery.Duration `json:"rate_window"`
	// Timeout bounds one attempt.
	Timeout delivery.Duration `json:"timeout"`
}

// Defaults and limits of a notifier.
const (
	DefaultCooldown   = 15 * time.Minute
	DefaultRateLimit  = 20
	DefaultRateWindow = time.Minute
	DefaultTimeout    = 10 * time.Second
	// DefaultMaxDelay caps the back-off between attempts unless the retry policy names
	// its own cap.
	DefaultMaxDelay = 15 * time.Minute
	maxSecretLength = 512
)

// NewConfig returns a config with its defaults set.
func NewConfig() *Config {
	n := 8
	return &Config{
		TargetOptions: delivery.TargetOptions{MaxConcurrent: 4, Retry: delivery.RetryPolicy{
			Base: delivery.Duration(10 * time.Second), MaxDelay: delivery.Duration(DefaultMaxDelay), MaxRetries: &n,
		}},
		Format:      FormatGeneric,
		MinSeverity: alert.SeverityWarning,
		Cooldown:    delivery.Duration(DefaultCooldown),
		RateLimit:   DefaultRateLimit,
		RateWindow:  delivery.Duration(DefaultRateWindow),
		Timeout:     delivery.Duration(DefaultTimeout),
	}
}

// WriteOnlyFields names the fields sealed at rest and never returned.
func (c *Config) WriteOnlyFields() []string { return []string{"url", "headers", "signing_secret"} }

// SecretDestination is where the headers go and the signatures made with the signing
// secret: a URL of another origin needs both entered again.
func (c *Config) SecretDestination() string { return c.URL }

// Validate checks the config; errors are *persistence.FieldError and never repeat the
// URL, a header value or the secret.
func (c *Config) Validate() error {
	var errs persistence.FieldErrors
	if err := httptarget.CheckSender(&errs, c.TargetOptions, c.URL, c.Timeout, "a notifier", "headers"); err != nil {
		return err
	}
	if _, err := ParseFormat(string(c.Format)); err != nil {
		errs.Add("format", err.Error())
	}
	if _, err := alert.ParseSeverity(string(c.MinSeverity)); err != nil {
		errs.Add("min_severity", err.Error())
	}
	for _, code := range c.Codes {
		if _, err := alert.ParseCode(string(code)); err != nil {
			errs.Add("codes", err.Error())
		}
	}
	if len(c.SigningSecret) > maxSecretLength {
		errs.Add("signing_secret", fmt.Sprintf("longer than %d bytes", maxSecretLength))
	}
	if c.SigningSecret != "" {
		if _, err := stdwebhook.Key(c.SigningSecret); err != nil {
			errs.Add("signing_secret", err.Error())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Headers)) {
		if err := checkHeader(name, c.Headers[name]); err != nil {
			errs.Add("headers", err.Error())
		}
	}
	if c.Cooldown < 0 || time.Duration(c.Cooldown) > 7*24*time.Hour {
		errs.Add("cooldown", "must be between 0s and 168h")
	}
	if c.RateLimit < 1 || c.RateLimit > 10000 {
		errs.Add("rate_limit", "must be between 1 and 10000")
	}
	if time.Duration(c.RateWindow) < time.Second || time.Duration(c.RateWindow) > 24*time.Hour {
		errs.Add("rate_window", "must be between 1s and 24h")
	}
	return errs.Err()
}

// reservedHeaders are set by the notifier itself, besides those the transport sets.
var reservedHeaders = []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"}

func checkHeader(name, value string) error {
	if err := httptarget.CheckHeaderName(name, "notifier", reservedHeaders...); err != nil {
		return err
	}
	if err := httptarget.CheckHeaderValue(value); err != nil {
		return fmt.Errorf("header %s: %w", http.CanonicalHeaderKey(name), err)
	}
	return nil
}

// passes reports whether the filter rules let a through (tests addressed to this
// instance always pass).
func (c *Config) passes(a alert.Alert) bool {
	if a.Code == alert.NotificationTest {
		return true
	}
	if a.Severity.Rank() < c.MinSeverity.Rank() {
		return false
	}
	return len(c.Codes) == 0 || slices.Contains(c.Codes, a.Code)
}
