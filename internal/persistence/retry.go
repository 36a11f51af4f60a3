package persistence

import (
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
