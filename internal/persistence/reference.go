package persistence

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxReferenceLen bounds a correlation id or an origin event id, in bytes.
const MaxReferenceLen = 255

// CheckReference checks a correlation id or origin event id taken from outside (an AS2
// header, a sidecar, a REST field): printable UTF-8 of at most MaxReferenceLen bytes.
// Empty passes, since every source then falls back on an id of its own; the store refuses
// a message whose ids are still empty.
func CheckReference(s string) error {
	switch {
	case len(s) > MaxReferenceLen:
		return fmt.Errorf("longer than %d bytes", MaxReferenceLen)
	case !utf8.ValidString(s):
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return errors.New("contains a control character")
		}
		if !unicode.IsPrint(r) {
			return fmt.Errorf("contains the unprintable character %U", r)
		}
	}
	return nil
}
