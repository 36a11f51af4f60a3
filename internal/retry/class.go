// Package retry holds retry policies: a default schedule and rules by failure class,
// how a failure's class picks the rule that decides, and the delay each strategy gives.
// Targets, routes and partner profiles carry policies; the delivery engine applies them.
package retry

import (
	"fmt"
	"strings"
)

// Class tells a policy what kind of failure it is deciding on.
type Class string

const (
	ClassTransport Class = "transport"       // connection refused, reset, DNS, file system
	ClassTimeout   Class = "timeout"         // no answer in time
	ClassThrottled Class = "http_throttled"  // HTTP 408 or 429: asked to come back later
	ClassHTTP5xx   Class = "http_5xx"        // the receiver failed
	ClassHTTP4xx   Class = "http_4xx"        // the receiver refused the request
	ClassRefused   Class = "partner_refusal" // an AS2 negative disposition or MDN error
	ClassInternal  Class = "internal"        // our own error: an unreadable payload, a bug, a panic
)

// AllClasses lists the classes in the order forms and documents show them.
var AllClasses = []Class{ClassTransport, ClassTimeout, ClassThrottled, ClassHTTP5xx, ClassHTTP4xx, ClassRefused, ClassInternal}

// ParseClass parses a class name.
func ParseClass(s string) (Class, error) {
	for _, c := range AllClasses {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, len(AllClasses))
	for i, c := range AllClasses {
		names[i] = string(c)
	}
	return "", fmt.Errorf("invalid error class %q: want one of %s", s, strings.Join(names, ", "))
}

func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Label names the class for people.
func (c Class) Label() string {
	switch c {
	case ClassTransport:
		return "Connection or file system error"
	case ClassTimeout:
		return "No answer in time"
	case ClassThrottled:
		return "HTTP 408 or 429 (come back later)"
	case ClassHTTP5xx:
		return "HTTP 5xx (receiver failed)"
	case ClassHTTP4xx:
		return "HTTP 4xx (request refused)"
	case ClassRefused:
		return "Partner refusal (AS2 MDN)"
	case ClassInternal:
		return "Our own error"
	}
	return string(c)
}
