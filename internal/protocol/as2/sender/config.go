package sender

import (
	"fmt"
	"strings"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// Config is the configuration of an as2-sender instance. Where a message goes, how it is
// protected, which receipt is asked for and how often a failed send is retried come from
// the partner's remote profile; the instance holds only what is the same for every
// partner.
type Config struct {
	// TargetOptions.Retry is a backstop, not the schedule: the partner's profile decides
	// when to send again and when to give up, and the engine never retries sooner than
	// this policy's delay nor more often than its max_retries. The defaults (1 s, 1000
	// retries) leave the decision to the profile.
	delivery.TargetOptions
	// ContentType labels the document inside the AS2 envelope.
	ContentType string `json:"content_type"`
	// ContentTypes labels documents by the extension of their file name (without the
	// dot: "xml", "edi"), before ContentType. It sits on the instance beside the
	// default because the label belongs to the documents our systems produce, the same
	// for every partner.
	ContentTypes map[string]string `json:"content_types,omitempty"`
	// MessageIDDomain is the part after the @ of the Message-IDs we make; empty means the
	// host of the gateway's public URL.
	MessageIDDomain string `json:"message_id_domain,omitempty"`
	// MaxMDNKiB bounds a synchronous MDN read from a partner's response.
	MaxMDNKiB int `json:"max_mdn_kib"`
}

// Sender defaults and limits.
const (
	DefaultContentType = "application/octet-stream"
	DefaultMaxMDNKiB   = 1024
	MinMDNKiB          = 16
	MaxMDNKiB          = 64 << 10
	maxDomainLength    = 253
	backstopRetries    = 1000
)

var (
	_ module.Config         = (*Config)(nil)
	_ delivery.TargetConfig = (*Config)(nil)
)

// NewConfig returns a config with its defaults set.
func NewConfig() *Config {
	retries := backstopRetries
	return &Config{
		TargetOptions: delivery.TargetOptions{
			Retry: delivery.RetryPolicy{
				Strategy:   delivery.RetryFixed,
				Base:       delivery.Duration(time.Second),
				MaxDelay:   delivery.Duration(time.Second),
				MaxRetries: &retries,
				// The profile decides whether a refused request is sent again; the
				// backstop's built-in never for http_4xx must not overrule it.
				Rules: retry.Rules{HTTP4xx: &delivery.RetryRule{Strategy: delivery.RetryFixed}},
			},
		},
		ContentType: DefaultContentType,
		MaxMDNKiB:   DefaultMaxMDNKiB,
	}
}

// Validate checks the config; errors are *persistence.FieldError.
func (c *Config) Validate() error {
	var errs persistence.FieldErrors
	if err := c.TargetOptions.Validate(); err != nil {
		field, msg, ok := strings.Cut(err.Error(), ": ")
		if !ok {
			field, msg = "retry", err.Error()
		}
		errs.Add(field, msg)
	}
	if c.ContentType == "" {
		errs.Add("content_type", "required")
	}
	if !validMediaType(c.ContentType) {
		errs.Add("content_type", "not a valid media type")
	}
	if err := validateContentTypes(c.ContentTypes); !errs.Merge(err) {
		return err
	}
	if c.MessageIDDomain != "" && !validDomain(c.MessageIDDomain) {
		errs.Add("message_id_domain", "must be a host name: letters, digits, hyphens and dots")
	}
	if c.MaxMDNKiB < MinMDNKiB || c.MaxMDNKiB > MaxMDNKiB {
		errs.Add("max_mdn_kib", fmt.Sprintf("must be between %d and %d", MinMDNKiB, MaxMDNKiB))
	}
	return errs.Err()
}

// validDomain accepts a dot-separated host name, which fits the right side of a
// Message-ID without quoting.
func validDomain(s string) bool {
	if s == "" || len(s) > maxDomainLength {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
