package loadtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// attemptLatencies are the 50th and 95th percentiles of the attempts claimed at or after
// since, from the claim until the answer was judged, as the history of each delivery
// holds them: the target's time plus what a claim adds before the post begins.
func attemptLatencies(ctx context.Context, dbURL string, since time.Time) (p50, p95 time.Duration, err error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	// Each claim's line is paired with the next line of its delivery that leaves
	// delivering: the attempt's outcome, whatever it was.
	rows, err := db.QueryContext(ctx, `SELECT EXTRACT(EPOCH FROM (o.at - c.at))
		FROM message_history c CROSS JOIN LATERAL (
			SELECT at FROM message_history o
			WHERE o.message_id = c.message_id AND o.delivery_id = c.delivery_id AND o.id > c.id AND o.from_state = 'delivering'
			ORDER BY o.id LIMIT 1) o
		WHERE c.to_state = 'delivering' AND c.at >= $1`, since.UTC())
	if err != nil {
		return 0, 0, fmt.Errorf("read attempt times: %w", err)
	}
	defer rows.Close()
	var lat []time.Duration
	for rows.Next() {
		var secs float64
		if err := rows.Scan(&secs); err != nil {
			return 0, 0, fmt.Errorf("read attempt times: %w", err)
		}
		lat = append(lat, time.Duration(secs*float64(time.Second)))
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("read attempt times: %w", err)
	}
	if len(lat) == 0 {
		return 0, 0, errors.New("read attempt times: the history holds no attempt claimed after the gate opened")
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	return pct(0.50), pct(0.95), nil
}
