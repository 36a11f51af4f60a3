package httppost

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"wharf/internal/delivery"
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
}

// Poster defaults and limits.
const (
	DefaultTimeout     = 30 * time.Second
	MaxTimeout         = time.Hour
	DefaultContentType = "application/octet-stream"
	maxURLLength       = 4096
	maxHeaderValue     = 8 << 10
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

// Validate checks the config; errors are *persistence.FieldError. Messages never repeat
// the URL or a secret header's value.
func (c *PosterConfig) Validate() error {
	if err := c.TargetOptions.Validate(); err != nil {
		field, msg, ok := strings.Cut(err.Error(), ": ")
		if !ok {
			field, msg = "retry", err.Error()
		}
		return &persistence.FieldError{Field: field, Message: msg}
	}
	if err := checkURL(c.URL); err != nil {
		return &persistence.FieldError{Field: "url", Message: err.Error()}
	}
	if c.Timeout <= 0 {
		return &persistence.FieldError{Field: "timeout", Message: "must be positive"}
	}
	if time.Duration(c.Timeout) > MaxTimeout {
		return &persistence.FieldError{Field: "timeout", Message: "must be at most 1h"}
	}
	if c.ContentType == "" {
		return &persistence.FieldError{Field: "content_type", Message: "required"}
	}
	if _, _, err := mime.ParseMediaType(c.ContentType); err != nil || strings.ContainsAny(c.ContentType, "\r\n") {
		return &persistence.FieldError{Field: "content_type", Message: "not a valid media type"}
	}
	seen := map[string]string{}
	for _, set := range []struct {
		field  string
		values map[string]string
	}{{"headers", c.Headers}, {"secret_headers", c.SecretHeaders}} {
		for _, name := range slices.Sorted(maps.Keys(set.values)) {
			if err := checkHeaderName(name); err != nil {
				return &persistence.FieldError{Field: set.field, Message: err.Error()}
			}
			canon := http.CanonicalHeaderKey(name)
			if other, dup := seen[canon]; dup {
				return &persistence.FieldError{Field: set.field, Message: fmt.Sprintf("header %s is already set in %s", canon, other)}
			}
			seen[canon] = set.field
			if err := checkHeaderValue(set.values[name]); err != nil {
				return &persistence.FieldError{Field: set.field, Message: fmt.Sprintf("header %s: %v", canon, err)}
			}
		}
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return fmt.Errorf("required")
	}
	if len(s) > maxURLLength {
		return fmt.Errorf("longer than %d bytes", maxURLLength)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("must name a host")
	case u.User != nil:
		return fmt.Errorf("must not carry credentials; use secret_headers (Authorization)")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("must not have a fragment")
	}
	return nil
}

// reservedHeaders are set by the transport or by the poster itself.
var reservedHeaders = []string{
	"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
	"Upgrade", "Expect", "Content-Type", "Content-Disposition", "Idempotency-Key",
}

func checkHeaderName(name string) error {
	if name == "" {
		return fmt.Errorf("empty header name")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return fmt.Errorf("header name %q has a character not allowed in a header name", name)
		}
	}
	canon := http.CanonicalHeaderKey(name)
	if slices.Contains(reservedHeaders, canon) {
		return fmt.Errorf("header %s is set by the poster or the transport", canon)
	}
	if strings.HasPrefix(canon, "X-Wharf-") {
		return fmt.Errorf("header %s: the X-Wharf- prefix is reserved", canon)
	}
	return nil
}

func checkHeaderValue(v string) error {
	if len(v) > maxHeaderValue {
		return fmt.Errorf("value longer than %d bytes", maxHeaderValue)
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return fmt.Errorf("value contains a control character")
		}
	}
	return nil
}

// isTokenChar reports RFC 9110 token characters.
func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}
