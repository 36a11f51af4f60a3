package events

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Defaults of a Stream.
const (
	DefaultHeartbeat = 15 * time.Second
	DefaultBatch     = 500
	DefaultLifetime  = 30 * time.Minute
	// StreamGrace is how long a stream waits for a missing history id (see Contiguous).
	StreamGrace = 2 * time.Second
	// poll is how often a stream looks for rows without a wake-up: the wake-ups are lossy,
	// and a stream waiting out a gap must look again.
	poll = time.Second
	// writeTimeout bounds one batch's or heartbeat's write to a slow client.
	writeTimeout = 30 * time.Second
)

// Stream serves GET /api/v1/events: the history as server-sent events, from the row
// after Last-Event-ID (or ?after=) in batches of Batch rows, then live as the store
// announces commits on the bus, with a comment line every Heartbeat. Without either, it
// starts after the newest row. The caller authenticates the request.
type Stream struct {
	DB        module.SQL
	Log       *slog.Logger
	Heartbeat time.Duration
	Batch     int
	// Lifetime ends a stream after a while (the client reconnects with Last-Event-ID), so
	// a revoked token stops being served.
	Lifetime time.Duration
	now      func() time.Time

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
	closed  chan struct{}
	once    sync.Once
}

// NewStream returns a stream over db with the defaults.
func NewStream(db module.SQL, log *slog.Logger) *Stream {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Stream{DB: db, Log: log, Heartbeat: DefaultHeartbeat, Batch: DefaultBatch, Lifetime: DefaultLifetime,
		now: time.Now, waiters: map[chan struct{}]struct{}{}, closed: make(chan struct{})}
}

// Wake tells every open stream that history was committed; a bus subscriber calls it.
// It never blocks: a stream already woken stays woken once.
func (s *Stream) Wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.waiters {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Close ends every open stream (the HTTP server is shutting down).
func (s *Stream) Close() { s.once.Do(func() { close(s.closed) }) }

// Query is what a request asks for.
type Query struct {
	After    int64
	HasAfter bool
	Types    []Pattern
	Party    persistence.PartyName
}

// ParseQuery reads the filters and the resumption point; errors name the parameter.
func ParseQuery(r *http.Request) (Query, error) {
	var q Query
	v := r.URL.Query()
	types, err := ParsePatterns(v.Get("types"))
	if err != nil {
		return q, &persistence.FieldError{Field: "types", Message: err.Error()}
	}
	q.Types = types
	if p := v.Get("party"); p != "" {
		name, err := persistence.ParsePartyName(p)
		if err != nil {
			return q, &persistence.FieldError{Field: "party", Message: err.Error()}
		}
		q.Party = name
	}
	after, field := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if after == "" {
		after, field = v.Get("after"), "after"
	}
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			return q, &persistence.FieldError{Field: field, Message: "must be an event id (a whole number of at least 0)"}
		}
		q.After, q.HasAfter = n, true
	}
	return q, nil
}

// Serve writes the stream for q until the client leaves, the lifetime ends or Close.
func (s *Stream) Serve(w http.ResponseWriter, r *http.Request, q Query) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	last := q.After
	if !q.HasAfter {
		err := s.DB.Read(ctx, func(tx module.Tx) error {
			var err error
			last, err = LastID(ctx, tx)
			return err
		})
		if err != nil {
			s.Log.Error("event stream: read the newest event", "err", err)
			http.Error(w, "the event stream is not available", http.StatusServiceUnavailable)
			return
		}
	}
	wake := make(chan struct{}, 1)
	s.mu.Lock()
	s.waiters[wake] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiters, wake)
		s.mu.Unlock()
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The retry field tells the client how soon to reconnect after the stream ends.
	if _, err := fmt.Fprintf(w, "retry: 2000\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	heartbeat := time.NewTicker(s.Heartbeat)
	defer heartbeat.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	end := time.NewTimer(s.Lifetime)
	defer end.Stop()
	var gapSince time.Time
	for {
		// A client that stops reading must not hold the stream for ever.
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		var err error
		var more bool
		last, gapSince, more, err = s.send(ctx, w, q, last, gapSince)
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Warn("event stream ended", "err", err)
			}
			return
		}
		_ = rc.Flush()
		if more {
			continue // a full batch: read on before waiting
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-heartbeat.C:
			_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			_ = rc.Flush()
		case <-end.C:
			return
		case <-s.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

// send writes the events of one batch after last; more reports a full batch.
func (s *Stream) send(ctx context.Context, w http.ResponseWriter, q Query, last int64, gapSince time.Time) (int64, time.Time, bool, error) {
	var rows []Row
	err := s.DB.Read(ctx, func(tx module.Tx) error {
		var err error
		rows, err = ReadAfter(ctx, tx, last, s.Batch)
		return err
	})
	if err != nil {
		return last, gapSince, false, err
	}
	full := len(rows) == s.Batch
	take, since := Contiguous(last, rows, gapSince, s.now(), StreamGrace)
	for _, r := range take {
		last = r.ID
		e := FromRow(r)
		if !Selects(q.Types, q.Party, e) {
			continue
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", r.ID, e.Type, e.Body()); err != nil {
			return last, since, false, fmt.Errorf("write event %d: %w", r.ID, err)
		}
	}
	return last, since, full && len(take) == len(rows), nil
}
