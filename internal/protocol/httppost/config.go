package httppost

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/httptarget"
	"wharf/internal/persistence"
)

// PosterConfig is the configuration of an http-poster instance.
type PosterConfig struct {
	delivery.TargetOptions
	// URL receives the POST (http or https). It is shown in the configuration but never
	// put in delivery reasons or logs, since its query may carry a token.
	URL string `json:"url" wharf:"required"`
	// Headers are extra request headers, shown in the configuration.
	Headers map[string]string `json:"headers,omitempty"`
	// SecretHeaders are extra request headers whose values are write-only.
	SecretHeaders map[string]string `json:"secret_headers,omitempty"`
	// Timeout bounds one attempt, from connecting to reading the response.
	Timeout delivery.Duration `json:"timeout"`
	// ContentType is the Content-Type of the body.
	ContentType string `json:"content_type"`
	// Handoff makes chosen answers wait for the in-house system's completion report.
	Handoff HandoffConfig `json:"handoff"`
}

// Poster defaults and limits.
const (
	DefaultTimeout     = 30 * time.Second
	MaxTimeout         = time.Hour
	DefaultContentType = "application/octet-stream"
)

// NewPosterConfig returns a config with its defaults set.
func NewPosterConfig() *PosterConfig {
	return &PosterConfig{
		Timeout:     delivery.Duration(DefaultTimeout),
		ContentType: DefaultContentType,
	}
}

// WriteOnlyFields names the fields sealed at rest and never returned.
func (c *PosterConfig) WriteOnlyFields() []string { return []string{"secret_headers"} }

// SecretDestination is where the secret headers go: a URL of another origin needs them
// entered again.
func (c *PosterConfig) SecretDestination() string { return c.URL }

// Validate checks the config; errors are *persistence.FieldError. Messages never repeat
// the URL or a secret header's value.
func (c *PosterConfig) Validate() error {
	var errs persistence.FieldErrors
	if err := delivery.CheckTargetOptions(c.TargetOptions); !errs.Merge(err) {
		return err
	}
	if err := httptarget.CheckURL(c.URL, "secret_headers"); err != nil {
		errs.Add("url", err.Error())
	}
	if c.Timeout <= 0 {
		errs.Add("timeout", "must be positive")
	}
	if time.Duration(c.Timeout) > MaxTimeout {
		errs.Add("timeout", "must be at most 1h")
	}
	if c.ContentType == "" {
		errs.Add("content_type", "required")
	}
	if _, _, err := mime.ParseMediaType(c.ContentType); err != nil || strings.ContainsAny(c.ContentType, "\r\n") {
		errs.Add("content_type", "not a valid media type")
	}
	if err := c.Handoff.Validate(); err != nil {
		return err
	}
	seen := map[string]string{}
	for _, set := range []struct {
		field  string
		values map[string]string
	}{{"headers", c.Headers}, {"secret_headers", c.SecretHeaders}} {
		for _, name := range slices.Sorted(maps.Keys(set.values)) {
			if err := httptarget.CheckHeaderName(name, "poster", reservedHeaders...); err != nil {
				errs.Add(set.field, err.Error())
			}
			canon := http.CanonicalHeaderKey(name)
			if other, dup := seen[canon]; dup {
				errs.Add(set.field, fmt.Sprintf("header %s is already set in %s", canon, other))
			}
			seen[canon] = set.field
			if err := httptarget.CheckHeaderValue(set.values[name]); err != nil {
				errs.Add(set.field, fmt.Sprintf("header %s: %v", canon, err))
			}
		}
	}
	return errs.Err()
}

// reservedHeaders are set by the poster itself, besides those the transport sets.
var reservedHeaders = []string{"Content-Disposition", "Idempotency-Key"}
