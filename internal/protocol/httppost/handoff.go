package httppost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// HandoffConfig makes chosen answers of the in-house system mean "accepted, completion
// pending": the delivery waits as awaiting_ack with the reference the answer carries,
// until the system reports completion or failure through the REST API, or the deadline
// passes. Without statuses every 2xx is delivered.
type HandoffConfig struct {
	// Statuses are the 2xx statuses that hand off, such as 202.
	Statuses []int `json:"statuses,omitempty"`
	// Reference says where the answer carries the system's job id.
	Reference HandoffReference `json:"reference"`
	// Deadline is how long the system has to report; then the delivery fails.
	Deadline delivery.Duration `json:"deadline,omitempty"`
}

// HandoffReference names where an answer carries its reference: a response header, or
// a top-level field of a JSON body (a string or a number). At most one is set; with
// neither, a handoff has no reference.
type HandoffReference struct {
	Header    string `json:"header,omitempty"`
	JSONField string `json:"json_field,omitempty"`
}

// Handoff limits.
const (
	MinHandoffDeadline = time.Minute
	maxJSONFieldName   = 64
	// maxHandoffBody bounds how much of an answer is read to find a JSON reference.
	maxHandoffBody = 64 << 10
)

// enabled reports whether any answer hands off.
func (h HandoffConfig) enabled() bool { return len(h.Statuses) > 0 }

// Validate checks the handoff block; errors are *persistence.FieldError.
func (h HandoffConfig) Validate() error {
	field := func(name, format string, args ...any) error {
		return &persistence.FieldError{Field: "handoff." + name, Message: fmt.Sprintf(format, args...)}
	}
	if !h.enabled() {
		if h.Deadline != 0 || h.Reference != (HandoffReference{}) {
			return field("statuses", "required when a deadline or a reference is set (such as 202)")
		}
		return nil
	}
	for i, st := range h.Statuses {
		if st < 200 || st > 299 {
			return field("statuses", "%d is not a 2xx status: only a success can hand off", st)
		}
		if slices.Contains(h.Statuses[:i], st) {
			return field("statuses", "%d is listed twice", st)
		}
	}
	d := time.Duration(h.Deadline)
	switch {
	case d == 0:
		return field("deadline", "required with statuses: how long the system has to report, such as 4h")
	case d < MinHandoffDeadline || d > delivery.MaxAwaitCompletion:
		return field("deadline", "must be between %s and %s", MinHandoffDeadline, delivery.MaxAwaitCompletion)
	}
	ref := h.Reference
	switch {
	case ref.Header != "" && ref.JSONField != "":
		return field("reference", "name either a header or a json_field, not both")
	case ref.Header != "" && !isToken(ref.Header):
		return field("reference.header", "not a valid header name")
	case ref.JSONField != "" && (len(ref.JSONField) > maxJSONFieldName || !isToken(ref.JSONField)):
		return field("reference.json_field", "use 1 to %d letters, digits and _-. of a top-level field name", maxJSONFieldName)
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110), which header names are and
// which is a safe rule for a JSON field name too.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// handoff turns an answer with a handoff status into awaiting_ack, with the answer's
// reference when it carries a usable one. The system accepted the document either way,
// so a missing or unusable reference is noted, not a failure that would send it again.
func (p *Poster) handoff(resp *http.Response) delivery.Result {
	ref, problem := p.reference(resp)
	note := fmt.Sprintf("accepted for later completion (HTTP %d)", resp.StatusCode)
	switch {
	case problem != "":
		note += "; " + problem
		p.log.Warn("handoff answer without a usable reference", "status", resp.StatusCode, "problem", problem)
	case ref != "":
		note += ", reference " + ref
	}
	return delivery.Handoff(p.now().Add(time.Duration(p.handoffCfg.Deadline)), ref, note)
}

// reference reads the answer's reference, or says why there is none it can keep.
func (p *Poster) reference(resp *http.Response) (ref, problem string) {
	where := p.handoffCfg.Reference
	switch {
	case where.Header != "":
		ref = resp.Header.Get(where.Header)
		if ref == "" {
			return "", "the answer has no " + http.CanonicalHeaderKey(where.Header) + " header"
		}
	case where.JSONField != "":
		var err error
		if ref, err = jsonReference(resp.Body, where.JSONField); err != nil {
			return "", err.Error()
		}
	default:
		return "", ""
	}
	if err := persistence.CheckExternalRef(ref); err != nil {
		return "", "its reference " + err.Error()
	}
	return ref, ""
}

// jsonReference reads a top-level string or number field of a JSON object body.
func jsonReference(body io.Reader, name string) (string, error) {
	raw, err := io.ReadAll(io.LimitReader(body, maxHandoffBody+1))
	if err != nil {
		return "", errors.New("its body could not be read")
	}
	if len(raw) > maxHandoffBody {
		return "", fmt.Errorf("its body is larger than %d KiB", maxHandoffBody>>10)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", errors.New("its body is not a JSON object")
	}
	v, ok := obj[name]
	if !ok {
		return "", fmt.Errorf("its JSON body has no field %s", name)
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		if _, err := strconv.ParseFloat(n.String(), 64); err == nil {
			return n.String(), nil
		}
	}
	return "", fmt.Errorf("its JSON field %s is neither a string nor a number", name)
}
