package ui

import (
	"context"
	"slices"
	"time"

	"wharf/internal/persistence"
)

// dashboardDays is how many days the dashboard's daily table covers: more than the live
// tables answer for (db.CountsLiveDays), so its older days come from the daily counts
// that outlive pruning.
const dashboardDays = 30

// dayRow is one UTC day of the dashboard's daily table.
type dayRow struct {
	Day                        string // 2006-01-02
	Delivered, Problems, Total int64
	Bytes                      int64
}

// dailyRows reads the message counts of the last dashboardDays days, newest first; days
// without messages are left out.
func (s *Server) dailyRows(ctx context.Context, now time.Time) ([]dayRow, error) {
	counts, err := s.store.CountMessagesPerDay(ctx, now.AddDate(0, 0, -(dashboardDays-1)))
	if err != nil {
		return nil, err
	}
	var out []dayRow
	for _, c := range counts {
		day := c.Day.Format(time.DateOnly)
		if len(out) == 0 || out[len(out)-1].Day != day {
			out = append(out, dayRow{Day: day})
		}
		r := &out[len(out)-1]
		r.Total += c.Count
		r.Bytes += c.Bytes
		switch {
		case c.Status == persistence.StatusDelivered:
			r.Delivered += c.Count
		case slices.Contains(problemStatuses, c.Status):
			r.Problems += c.Count
		}
	}
	slices.Reverse(out)
	return out, nil
}
