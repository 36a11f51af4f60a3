package module

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"

	"wharf/internal/persistence"
)

// SecretBinder is implemented by configs whose write-only fields are sent to one
// destination, a URL (an http-poster's secret headers, a notifier's headers and signing
// secret). SecretDestination returns it. On an update, a destination that now points to
// another scheme, host or port keeps no stored write-only value: each must be entered
// again (or cleared), so editing the URL cannot carry a stored Authorization header to a
// host of the editor's choosing. A new path on the same origin keeps them.
type SecretBinder interface {
	SecretDestination() string
}

// checkSecretBinding refuses cfg when its destination left the origin of the stored
// config's and write-only values were kept from the stored config (the fields named in
// kept) rather than entered with the change. stored holds the stored config's fields,
// write-only ones included. Each kept field gets its own field error, so a form shows the
// message beside every input that must be filled in again.
func checkSecretBinding(p Plugin, cfg Config, stored map[string]json.RawMessage, kept []string) error {
	b, ok := cfg.(SecretBinder)
	if !ok || len(kept) == 0 {
		return nil
	}
	old, ok := p.NewConfig().(SecretBinder)
	if !ok {
		return nil
	}
	raw, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	// The stored config passed validation when it was saved; only its destination is
	// needed here, so a field a later version no longer knows does not matter.
	if err := json.Unmarshal(raw, old); err != nil {
		return &persistence.FieldError{Field: "config", Message: "the stored config does not decode: " + err.Error()}
	}
	if sameOrigin(old.SecretDestination(), b.SecretDestination()) {
		return nil
	}
	slices.Sort(kept)
	var errs []error
	for _, k := range kept {
		errs = append(errs, &persistence.FieldError{Field: k, Message: "enter it again, or clear it: " +
			"the URL it is sent to now points to another scheme, host or port, and a stored secret does not follow it there"})
	}
	return errors.Join(errs...)
}

// sameOrigin reports whether two URLs have one scheme, host and port (a missing port is
// the scheme's default). Anything that does not parse is another origin.
func sameOrigin(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Hostname(), ub.Hostname()) &&
		originPort(ua) == originPort(ub)
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
