package persistence

import (
	"database/sql/driver"
	"fmt"
	"strings"
)

// Every closed set of domain strings has one canonical list and one parser; JSON, SQL
// scans, SQL writes, forms and flags all go through it, so no entry point admits a value
// the domain refuses. The helpers below keep each type's methods to one line apiece.

func parseEnum[T ~string](what, s string, all []T) (T, error) {
	for _, v := range all {
		if string(v) == s {
			return v, nil
		}
	}
	names := make([]string, len(all))
	for i, v := range all {
		names[i] = string(v)
	}
	return "", fmt.Errorf("invalid %s %q: want one of %s", what, s, strings.Join(names, ", "))
}

// scanText turns a database value into a string for a domain type's Scan.
func scanText(src any) (string, error) {
	switch v := src.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	default:
		return "", fmt.Errorf("cannot scan %T into a domain string", src)
	}
}

// scanInto scans src and parses it, so a value the domain refuses never leaves the database
// layer unnoticed.
func scanInto[T ~string](dst *T, src any, parse func(string) (T, error)) error {
	s, err := scanText(src)
	if err != nil {
		return err
	}
	v, err := parse(s)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// textOf validates v before it is written anywhere.
func textOf[T ~string](v T, parse func(string) (T, error)) ([]byte, error) {
	if _, err := parse(string(v)); err != nil {
		return nil, err
	}
	return []byte(v), nil
}

func valueOf[T ~string](v T, parse func(string) (T, error)) (driver.Value, error) {
	if _, err := parse(string(v)); err != nil {
		return nil, fmt.Errorf("refusing to write: %w", err)
	}
	return string(v), nil
}

func unmarshalInto[T ~string](dst *T, b []byte, parse func(string) (T, error)) error {
	v, err := parse(string(b))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// The exported forms serve the domain types of modules (AS2 algorithms, …) the same way.

// ParseEnum finds s in the canonical list all; the error names what and the list.
func ParseEnum[T ~string](what, s string, all []T) (T, error) { return parseEnum(what, s, all) }

// ScanDomain is a domain type's sql.Scanner: scan, then parse.
func ScanDomain[T ~string](dst *T, src any, parse func(string) (T, error)) error {
	return scanInto(dst, src, parse)
}

// DomainText is a domain type's MarshalText: it refuses a value the domain refuses.
func DomainText[T ~string](v T, parse func(string) (T, error)) ([]byte, error) {
	return textOf(v, parse)
}

// DomainValue is a domain type's driver.Valuer: nothing invalid is written.
func DomainValue[T ~string](v T, parse func(string) (T, error)) (driver.Value, error) {
	return valueOf(v, parse)
}

// UnmarshalDomain is a domain type's UnmarshalText.
func UnmarshalDomain[T ~string](dst *T, b []byte, parse func(string) (T, error)) error {
	return unmarshalInto(dst, b, parse)
}
