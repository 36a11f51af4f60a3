package db

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"wharf/internal/persistence"
)

// Checks on records before anything is written. Domain strings are parsed with their own
// ParseX; the rest (free text, hashes) is bounded here. Each failure is a
// *persistence.FieldError naming the field.

func fieldErr(field string, err error) error {
	return &persistence.FieldError{Field: field, Message: err.Error()}
}

func fieldMsg(field, format string, args ...any) error {
	return &persistence.FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// check parses v with parse and reports a FieldError for field when it fails.
func check[T ~string](field string, v T, parse func(string) (T, error)) error {
	if _, err := parse(string(v)); err != nil {
		return fieldErr(field, err)
	}
	return nil
}

// checkText accepts valid UTF-8 without control characters, at most max bytes.
func checkText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return fieldMsg(field, "longer than %d bytes", max)
	case !utf8.ValidString(s):
		return fieldMsg(field, "not valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fieldMsg(field, "contains a control character")
	}
	return nil
}

// checkSHA256 accepts a lower-case hex SHA-256, or nothing when optional.
func checkSHA256(field, s string, optional bool) error {
	if s == "" && optional {
		return nil
	}
	if len(s) != 64 || strings.ToLower(s) != s {
		return fieldMsg(field, "must be 64 lower-case hex digits")
	}
	if _, err := hex.DecodeString(s); err != nil {
		return fieldMsg(field, "must be 64 lower-case hex digits")
	}
	return nil
}

func prefixField(prefix string, err error) error {
	if fe, ok := err.(*persistence.FieldError); ok {
		return &persistence.FieldError{Field: prefix + fe.Field, Message: fe.Message}
	}
	return err
}

// checkReference refuses a correlation or origin event id that is empty or not what
// persistence.CheckReference admits: no message, delivery or history line is without
// both ids.
func checkReference(field, s string) error {
	if s == "" {
		return fieldMsg(field, "is empty")
	}
	if err := persistence.CheckReference(s); err != nil {
		return fieldErr(field, err)
	}
	return nil
}
