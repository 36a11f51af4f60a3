package persistence

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Metadata limits: what a source may attach to a message besides the document. Values
// come from outside (AS2 headers, sidecars, REST), so they are bounded and plain text.
const (
	MaxMetadataEntries = 32
	MaxMetadataName    = 64
	MaxMetadataValue   = 256
)

var metadataName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// ParseMetadataName lower-cases s and checks it is a metadata name: [a-z0-9_-]{1,64}.
func ParseMetadataName(s string) (string, error) {
	n := strings.ToLower(s)
	if !metadataName.MatchString(n) {
		return "", fmt.Errorf("invalid metadata name %q: want 1 to %d of a-z, 0-9, _ and -", s, MaxMetadataName)
	}
	return n, nil
}

// CheckMetadataValue accepts valid UTF-8 of at most MaxMetadataValue bytes without
// control characters.
func CheckMetadataValue(v string) error {
	switch {
	case len(v) > MaxMetadataValue:
		return fmt.Errorf("longer than %d bytes", MaxMetadataValue)
	case !utf8.ValidString(v):
		return fmt.Errorf("not valid UTF-8")
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return fmt.Errorf("contains a control character")
	}
	return nil
}

// NormalizeMetadata checks a source's metadata and returns it with lower-cased names: at
// most MaxMetadataEntries entries, each name valid and given once (case-insensitively),
// each value valid. The error names the entry that is wrong. An empty map is nil.
func NormalizeMetadata(in map[string]string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxMetadataEntries {
		return nil, &FieldError{Field: "metadata", Message: fmt.Sprintf("has %d entries, at most %d are allowed", len(in), MaxMetadataEntries)}
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		n, err := ParseMetadataName(k)
		if err != nil {
			return nil, &FieldError{Field: "metadata", Message: err.Error()}
		}
		if _, dup := out[n]; dup {
			return nil, &FieldError{Field: "metadata." + n, Message: "is given twice"}
		}
		if err := CheckMetadataValue(v); err != nil {
			return nil, &FieldError{Field: "metadata." + n, Message: err.Error()}
		}
		out[n] = v
	}
	return out, nil
}
