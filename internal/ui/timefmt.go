package ui

import "time"

// displayTime is how the pages of partners and messages show a moment: one format, in one
// place, so the display time zone applies to all of them by changing this function.
func displayTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// machineTime is a moment for a <time datetime> attribute.
func machineTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// displayDay is the day of a moment, for expiries.
func displayDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }
