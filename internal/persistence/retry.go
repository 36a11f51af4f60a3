package persistence

import (
	"errors"
	"strings"

	"wharf/internal/retry"
)

// CheckRetry validates a retry policy held under field (a route's "retry"); the error is a
// *FieldError naming the policy's own field under it ("retry.rules.http_5xx.base").
func CheckRetry(field string, p retry.Policy) error {
	err := p.Validate()
	if err == nil {
		return nil
	}
	sub, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return &FieldError{Field: field, Message: err.Error()}
	}
	return &FieldError{Field: field + "." + sub, Message: msg}
}

// DecodeRetry reads a retry policy held under field from JSON (a route's "retry"):
// null or nothing is nil, the target's policy; any refusal is a *FieldError naming the
// policy's own field under field.
func DecodeRetry(field string, raw []byte) (*retry.Policy, error) {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return nil, nil
	}
	p, err := retry.Decode(raw)
	var fe *retry.FieldError
	if errors.As(err, &fe) {
		return nil, &FieldError{Field: strings.TrimSuffix(field+"."+fe.Field, "."), Message: fe.Message}
	}
	if err != nil {
		return nil, &FieldError{Field: field, Message: err.Error()}
	}
	return &p, nil
}
