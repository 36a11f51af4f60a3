package ui

import "time"

// displayTime is a moment inside a sentence built in Go (a verdict), where the page's
// "when" cannot reach: in the display zone and the one layout "when" shows too.
func displayTime(t time.Time, zone *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(zoneOrUTC(zone)).Format(timeLayout)
}

// displayDay is the day of a moment in the display zone, for expiries.
func displayDay(t time.Time, zone *time.Location) string {
	return t.In(zoneOrUTC(zone)).Format(time.DateOnly)
}

func zoneOrUTC(zone *time.Location) *time.Location {
	if zone == nil {
		return time.UTC
	}
	return zone
}

// location is the zone pages show times in now.
func (z *displayZone) location() *time.Location { return z.loc.Load() }
