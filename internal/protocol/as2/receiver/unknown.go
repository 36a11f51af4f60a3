package receiver

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"wharf/internal/persistence"
)

// Requests from unknown senders are counted in memory and written in one transaction at
// most every unknownFlushGap, so a flood of them costs the database one write per gap
// rather than one per request, and the memory they take is bounded by maxPendingUnknown
// distinct pairs (more are dropped and the drop is logged).
const (
	unknownFlushGap   = time.Second
	maxPendingUnknown = 1000
)

type unknownKey struct{ addr, from, to string }

// unknownTally holds the counts not yet written.
type unknownTally struct {
	mu      sync.Mutex
	hits    map[unknownKey]*persistence.UnknownSenderHit
	dropped int
}

// add counts one request; it reports whether the tally was empty before.
func (u *unknownTally) add(hit persistence.UnknownSenderHit) (first bool) {
	k := unknownKey{hit.RemoteAddr, hit.SenderID, hit.ReceiverID}
	u.mu.Lock()
	defer u.mu.Unlock()
	first = len(u.hits) == 0 && u.dropped == 0
	if h, ok := u.hits[k]; ok {
		h.Count++
		h.Reason = hit.Reason
		return first
	}
	if len(u.hits) >= maxPendingUnknown {
		u.dropped++
		return first
	}
	if u.hits == nil {
		u.hits = map[unknownKey]*persistence.UnknownSenderHit{}
	}
	hit.Count = 1
	u.hits[k] = &hit
	return first
}

// take empties the tally.
func (u *unknownTally) take() ([]persistence.UnknownSenderHit, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]persistence.UnknownSenderHit, 0, len(u.hits))
	for _, h := range u.hits {
		out = append(out, *h)
	}
	dropped := u.dropped
	u.hits, u.dropped = nil, 0
	return out, dropped
}

// countUnknownSender counts a request refused before both AS2 ids named profiles, by
// remote address and the AS2 ids as sent, so the operator sees who keeps trying (a
// partner not set up yet, a wrong id, a scanner).
func (rc *Receiver) countUnknownSender(r *http.Request, reason string) {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	first := rc.unknown.add(persistence.UnknownSenderHit{
		Source:     rc.name,
		RemoteAddr: host,
		SenderID:   r.Header.Get("AS2-From"),
		ReceiverID: r.Header.Get("AS2-To"),
		Reason:     reason,
	})
	if first {
		select {
		case rc.unknownWake <- struct{}{}:
		default:
		}
	}
}

// writeUnknown writes the tally whenever it fills, at most every unknownFlushGap, until
// ctx ends; Stop writes what is left.
func (rc *Receiver) writeUnknown(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rc.unknownWake:
		}
		rc.flushUnknown(ctx)
		t := time.NewTimer(unknownFlushGap)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		// What arrived during the gap found the tally non-empty and woke nobody.
		select {
		case rc.unknownWake <- struct{}{}:
		default:
		}
	}
}

// flushUnknown writes the counted requests; a failure loses the counts and is logged.
func (rc *Receiver) flushUnknown(ctx context.Context) {
	hits, dropped := rc.unknown.take()
	if dropped > 0 {
		rc.log.Warn("requests of unknown AS2 senders not counted: too many distinct senders at once", "dropped", dropped)
	}
	if len(hits) == 0 {
		return
	}
	if err := rc.deps.Store.RecordUnknownSenders(ctx, hits); err != nil {
		rc.log.Warn("unknown AS2 senders not counted", "senders", len(hits), "err", err)
	}
}
