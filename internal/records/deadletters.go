package records

import (
	"fmt"
	"net/url"
	"time"
	"unicode/utf8"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// DeadLetterParams are the names of the dead letters' filters, as REST query parameters,
// REST bulk-action filter fields and the UI's form fields alike.
var DeadLetterParams = []string{"state", "target", "partner", "session", "error_class", "older_than", "newer_than"}

// maxSessionFilter bounds the session filter, in bytes (a session key's bound).
const maxSessionFilter = 400

// ParseDeadLetterFilter reads the dead letters' filters from v; ages are durations such as
// 90m or 24h before now. A bad value is a FieldError naming its parameter.
func ParseDeadLetterFilter(v url.Values, now time.Time) (persistence.DeadLetterFilter, error) {
	var f persistence.DeadLetterFilter
	var err error
	if s := v.Get("state"); s != "" {
		if f.State, err = persistence.ParseDeliveryState(s); err != nil || (f.State != persistence.DeliveryFailed && f.State != persistence.DeliveryParked) {
			return f, &persistence.FieldError{Field: "state", Message: "must be failed or parked"}
		}
	}
	if s := v.Get("target"); s != "" {
		if f.Target, err = persistence.ParseInstanceName(s); err != nil {
			return f, &persistence.FieldError{Field: "target", Message: err.Error()}
		}
	}
	if s := v.Get("partner"); s != "" {
		if f.Party, err = persistence.ParsePartyName(s); err != nil {
			return f, &persistence.FieldError{Field: "partner", Message: err.Error()}
		}
	}
	f.Session = v.Get("session")
	if len(f.Session) > maxSessionFilter || !utf8.ValidString(f.Session) {
		return f, &persistence.FieldError{Field: "session", Message: fmt.Sprintf("must be UTF-8 text of at most %d bytes", maxSessionFilter)}
	}
	if s := v.Get("error_class"); s != "" {
		c, err := retry.ParseClass(s)
		if err != nil {
			return f, &persistence.FieldError{Field: "error_class", Message: err.Error()}
		}
		f.ErrorClass = string(c)
	}
	for _, a := range []struct {
		name string
		dst  *time.Time
	}{{"older_than", &f.CreatedBefore}, {"newer_than", &f.CreatedAfter}} {
		s := v.Get(a.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return f, &persistence.FieldError{Field: a.name, Message: "must be a duration such as 90m or 24h"}
		}
		*a.dst = now.Add(-d)
	}
	if !f.CreatedBefore.IsZero() && !f.CreatedAfter.IsZero() && !f.CreatedBefore.After(f.CreatedAfter) {
		return f, &persistence.FieldError{Field: "older_than", Message: "must be less than newer_than"}
	}
	return f, nil
}
