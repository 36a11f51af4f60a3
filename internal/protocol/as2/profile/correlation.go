package profile

import (
	"errors"
	"fmt"
)

// maxHeaderName bounds the correlation header's name.
const maxHeaderName = 64

// checkHeaderName accepts an HTTP header field name (RFC 9110 token characters), or
// nothing when no header is named.
func checkHeaderName(s string) error {
	if s == "" {
		return nil
	}
	if len(s) > maxHeaderName {
		return fmt.Errorf("longer than %d characters", maxHeaderName)
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return errors.New("must be a header name: letters, digits and !#$%&'*+-.^_`|~ only")
		}
	}
	return nil
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
