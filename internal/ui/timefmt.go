package ui

import "time"

// displayTime is a moment inside a sentence built in Go (a verdict), where the page's
// template function cannot reach: UTC, and said so.
func displayTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// displayDay is the day of a moment, for expiries.
func displayDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }
