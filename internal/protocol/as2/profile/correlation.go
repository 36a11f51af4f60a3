package profile

import (
	"errors"
	"fmt"

	"wharf/internal/httptarget"
)

// maxHeaderName bounds the correlation header's name.
const maxHeaderName = 64

// checkHeaderName accepts an HTTP header field name, or nothing when no header is named.
func checkHeaderName(s string) error {
	switch {
	case s == "":
		return nil
	case len(s) > maxHeaderName:
		return fmt.Errorf("longer than %d characters", maxHeaderName)
	case !httptarget.IsHeaderName(s):
		return errors.New("must be a header name: letters, digits and !#$%&'*+-.^_`|~ only")
	}
	return nil
}
