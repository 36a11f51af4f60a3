package loadtest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// maxSessions bounds -sessions: each session is a partner the run creates.
const maxSessions = 10000

func checkSessions(opt FilesOptions) error {
	switch {
	case opt.Sessions < 0 || opt.Sessions > maxSessions:
		return fmt.Errorf("loadtest: -sessions must be from 0 to %d", maxSessions)
	case opt.Ordered && opt.Sessions == 0:
		return errors.New("loadtest: -ordered needs -sessions")
	}
	return nil
}

// partners lists the partners the run addresses: one per session, else acme.
func partners(opt FilesOptions) []string {
	if opt.Sessions == 0 {
		return []string{"acme"}
	}
	out := make([]string, opt.Sessions)
	for i := range out {
		out[i] = fmt.Sprintf("s%05d", i)
	}
	return out
}

// partnerOf is the partner of the i-th file: round-robin over the sessions.
func partnerOf(opt FilesOptions, i int) string {
	if opt.Sessions == 0 {
		return "acme"
	}
	return fmt.Sprintf("s%05d", i%opt.Sessions)
}

// arrival is a delivered file as the writer left it.
type arrival struct {
	session string
	seq     int // the order it was dropped in
	name    string
	written time.Time
}

// checkInboxOrder reads when the writer wrote each file and checks each session's order.
func checkInboxOrder(inbox string, docs []*doc) error {
	arrivals := make([]arrival, len(docs))
	for i, d := range docs {
		info, err := os.Stat(filepath.Join(inbox, d.name))
		if err != nil {
			return fmt.Errorf("order check: %w", err)
		}
		arrivals[i] = arrival{session: d.session, seq: d.seq, name: d.name, written: info.ModTime()}
	}
	return checkOrder(arrivals)
}

// checkOrder requires that within each session no file was written before one dropped
// earlier. The writer writes one file of a session at a time, so its modification times
// rise along the session; files written within one tick of the file system's clock tie,
// which is no overtaking.
func checkOrder(arrivals []arrival) error {
	bySession := map[string][]arrival{}
	for _, a := range arrivals {
		bySession[a.session] = append(bySession[a.session], a)
	}
	var bad []string
	for _, s := range slices.Sorted(maps.Keys(bySession)) {
		list := bySession[s]
		slices.SortFunc(list, func(a, b arrival) int { return a.seq - b.seq })
		for i := 1; i < len(list); i++ {
			prev, cur := list[i-1], list[i]
			if cur.written.Before(prev.written) {
				bad = append(bad, fmt.Sprintf("session %s: %s (dropped %d) written %s before %s (dropped %d)",
					s, cur.name, cur.seq, prev.written.Sub(cur.written), prev.name, prev.seq))
			}
		}
	}
	if len(bad) > 0 {
		shown := bad[:min(len(bad), 5)]
		return fmt.Errorf("order check: %d files overtook an earlier file of their session: %v", len(bad), shown)
	}
	return nil
}
