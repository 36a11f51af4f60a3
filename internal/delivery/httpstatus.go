package delivery

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps how far a receiver's Retry-After can push the next attempt.
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads a Retry-After header of an HTTP target's answer: delay seconds or an
// HTTP date, capped at MaxRetryAfter; false when there is none or it cannot be read.
func RetryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs > uint64(MaxRetryAfter/time.Second) {
			return now.Add(MaxRetryAfter), true
		}
		return now.Add(time.Duration(secs) * time.Second), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	switch {
	case t.Before(now):
		return now, true
	case t.Sub(now) > MaxRetryAfter:
		return now.Add(MaxRetryAfter), true
	}
	return t, true
}

// HTTPStatusError names an HTTP status for a delivery's reason.
func HTTPStatusError(code int) error {
	if text := http.StatusText(code); text != "" {
		return fmt.Errorf("HTTP %d %s", code, text)
	}
	return fmt.Errorf("HTTP %d", code)
}
