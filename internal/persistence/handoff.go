package persistence

import (
	"errors"
	"fmt"
)

// MaxExternalRefBytes bounds an external reference (an in-house system's job id).
const MaxExternalRefBytes = 200

// CheckExternalRef accepts a reference a target answered with: 1 to MaxExternalRefBytes
// of printable ASCII without spaces, so it reads back unchanged in REST, the UI, history
// lines and a reporter's check, and carries nothing that could break them.
func CheckExternalRef(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case len(s) > MaxExternalRefBytes:
		return fmt.Errorf("is longer than %d bytes", MaxExternalRefBytes)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return fmt.Errorf("has a character other than printable ASCII at byte %d", i+1)
		}
	}
	return nil
}
