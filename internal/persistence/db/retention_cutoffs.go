package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// never is the cutoff of data kept for ever: no stored time is before it.
var never = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// cutoffs are the times before which a message's payloads (or history) expire: its
// partner's own retention when set, else its organization's, else the global setting.
type cutoffs struct {
	parties []partyCutoff // partners first, so a partner's setting wins
	global  time.Time
}

type partyCutoff struct {
	name persistence.PartyName
	at   time.Time
}

// cutoffAt is the cutoff of days before now; 0 days keeps for ever.
func cutoffAt(now time.Time, days int) time.Time {
	if days <= 0 {
		return never
	}
	return utc(now).Add(-time.Duration(days) * 24 * time.Hour)
}

// readCutoffs reads the parties' own retention; pick chooses payload or history days.
func (t *txn) readCutoffs(ctx context.Context, now time.Time, global int, pick func(persistence.PartyRetention) *int) (cutoffs, error) {
	c := cutoffs{global: cutoffAt(now, global)}
	all, err := t.partyRetentions(ctx)
	if err != nil {
		return c, err
	}
	for _, kind := range []persistence.PartyKind{persistence.PartyPartner, persistence.PartyOrganization} {
		for _, pr := range all {
			if d := pick(pr); pr.Kind == kind && d != nil {
				c.parties = append(c.parties, partyCutoff{pr.Name, cutoffAt(now, *d)})
			}
		}
	}
	return c, nil
}

// latest is the latest cutoff of any message: nothing created after it expires yet.
func (c cutoffs) latest() time.Time { return c.extreme(time.Time.After) }

// earliest is the earliest cutoff of any message: everything before it has expired.
func (c cutoffs) earliest() time.Time { return c.extreme(time.Time.Before) }

// extreme is the cutoff that beats every other by beats.
func (c cutoffs) extreme(beats func(time.Time, time.Time) bool) time.Time {
	x := c.global
	for _, p := range c.parties {
		if beats(p.at, x) {
			x = p.at
		}
	}
	return x
}

// without returns c where every cutoff at or before at keeps for ever instead.
func (c cutoffs) without(at time.Time) cutoffs {
	keep := func(x time.Time) time.Time {
		if !x.After(at) {
			return never
		}
		return x
	}
	out := cutoffs{global: keep(c.global)}
	for _, p := range c.parties {
		out.parties = append(out.parties, partyCutoff{p.name, keep(p.at)})
	}
	return out
}

// expr is the SQL value of a message's cutoff, for the messages aliased m.
func (c cutoffs) expr(s *Store) (string, []any) {
	if len(c.parties) == 0 {
		return "?", []any{s.tv(c.global)}
	}
	v := "?"
	if s.dialect == DialectPostgres {
		v = "CAST(? AS timestamptz)"
	}
	var b strings.Builder
	var args []any
	b.WriteString("CASE")
	for _, p := range c.parties {
		for _, col := range []string{"m.from_party", "m.to_party"} {
			fmt.Fprintf(&b, " WHEN %s = ? THEN %s", col, v)
			args = append(args, string(p.name), s.tv(p.at))
		}
	}
	b.WriteString(" ELSE " + v + " END")
	return b.String(), append(args, s.tv(c.global))
}
