package records

import (
	"errors"
	"strconv"
	"time"

	"wharf/internal/persistence"
)

// AuditFilterFields are the filters an audit log list takes, for the REST API and the
// web UI alike.
var AuditFilterFields = []string{"actor", "kind", "action", "record_id", "since", "until"}

// ParseAuditFilter reads an audit list's filters from get (a query or a form). Times are
// RFC 3339; an unknown or malformed value is a FieldError naming it.
func ParseAuditFilter(get func(string) string) (persistence.AuditFilter, error) {
	f := persistence.AuditFilter{
		Actor: get("actor"), Kind: get("kind"), Action: get("action"), RecordID: get("record_id"),
	}
	var errs []error
	for _, c := range []struct {
		name, value string
	}{{"actor", f.Actor}, {"kind", f.Kind}, {"action", f.Action}, {"record_id", f.RecordID}} {
		if len(c.value) > 200 {
			errs = append(errs, fieldError(c.name, "must be at most 200 bytes"))
		}
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := get(t.name)
		if v == "" {
			continue
		}
		var err error
		if *t.dst, err = time.Parse(time.RFC3339, v); err != nil {
			errs = append(errs, fieldError(t.name, "must be an RFC 3339 time such as 2026-01-31T12:00:00Z"))
		}
	}
	if v := get("after_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fieldError("after_id", "must be an event id (0 or more)"))
		}
		f.AfterID = n
	}
	return f, errors.Join(errs...)
}
