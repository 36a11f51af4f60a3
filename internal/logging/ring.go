package logging

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Entry is one log record as the ring keeps it: its attributes already formatted as
// key=value text, so the ring holds no reference into the caller's values.
type Entry struct {
	Seq     uint64 // increases by one per record, across the ring's whole life
	Time    time.Time
	Level   slog.Level
	Message string
	Attrs   string
}

// Line is the entry as one text line without its time, for matching a filter.
func (e Entry) Line() string {
	if e.Attrs == "" {
		return e.Level.String() + " " + e.Message
	}
	return e.Level.String() + " " + e.Message + " " + e.Attrs
}

// Ring keeps the last records of the process's log in memory, for the web UI's live
// tail. It is safe for concurrent use; logging into it never blocks on a reader.
type Ring struct {
	level slog.Leveler

	mu      sync.Mutex
	entries []Entry // circular, len == capacity once full
	next    int     // where the next entry goes once full
	seq     uint64
	subs    map[chan struct{}]struct{}
}

// NewRing keeps the last size records at level or above.
func NewRing(size int, level slog.Leveler) *Ring {
	if size < 1 {
		size = 1
	}
	return &Ring{level: level, entries: make([]Entry, 0, size), subs: map[chan struct{}]struct{}{}}
}

func (r *Ring) add(e Entry) {
	r.mu.Lock()
	r.seq++
	e.Seq = r.seq
	if len(r.entries) < cap(r.entries) {
		r.entries = append(r.entries, e)
	} else {
		r.entries[r.next] = e
		r.next = (r.next + 1) % len(r.entries)
	}
	for ch := range r.subs {
		select {
		case ch <- struct{}{}:
		default: // already signalled; the reader takes everything new at once
		}
	}
	r.mu.Unlock()
}

// Subscribe returns a channel signalled (coalesced) after new records arrive, and a
// function that ends the subscription.
func (r *Ring) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	r.subs[ch] = struct{}{}
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		delete(r.subs, ch)
		r.mu.Unlock()
	}
}

// Tail returns up to limit entries, newest first, at min level or above whose line
// contains text (case-insensitive; empty matches all).
func (r *Ring) Tail(min slog.Level, text string, limit int) []Entry {
	text = strings.ToLower(text)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Entry
	n := len(r.entries)
	for i := 0; i < n && len(out) < limit; i++ {
		// Newest first: the entry before next, walking back round the ring.
		e := r.entries[(r.next-1-i+2*n)%n]
		if e.Level < min {
			continue
		}
		if text != "" && !strings.Contains(strings.ToLower(e.Line()), text) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Handler is a slog.Handler that records into the ring; combine it with the process's
// own handler with Tee.
func (r *Ring) Handler() slog.Handler { return &ringHandler{ring: r} }

type ringHandler struct {
	ring   *Ring
	prefix string // the open groups, "a.b."
	attrs  string // formatted attributes of WithAttrs
}

func (h *ringHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.ring.level.Level()
}

func (h *ringHandler) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(h.attrs)
	rec.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	h.ring.add(Entry{Time: rec.Time, Level: rec.Level, Message: rec.Message, Attrs: b.String()})
	return nil
}

func (h *ringHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		appendAttr(&b, h.prefix, a)
	}
	return &ringHandler{ring: h.ring, prefix: h.prefix, attrs: b.String()}
}

func (h *ringHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &ringHandler{ring: h.ring, prefix: h.prefix + name + ".", attrs: h.attrs}
}

// appendAttr writes a as " key=value" the way the text handler does: groups flattened
// with dots, values quoted when they hold spaces, quotes or control characters.
func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, ga := range v.Group() {
			appendAttr(b, p, ga)
		}
		return
	}
	if a.Key == "" {
		return
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(prefix)
	b.WriteString(a.Key)
	b.WriteByte('=')
	s := v.String()
	if v.Kind() == slog.KindTime {
		s = v.Time().Format(time.RFC3339Nano)
	}
	if needsQuote(s) {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}

// Tee sends each record to every handler that is enabled for its level.
func Tee(hs ...slog.Handler) slog.Handler { return tee(hs) }

type tee []slog.Handler

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t tee) Handle(ctx context.Context, r slog.Record) error {
	var first error
	for _, h := range t {
		if !h.Enabled(ctx, r.Level) {
			continue
		}
		// Each handler gets its own copy: a handler may add attributes to the record.
		if err := h.Handle(ctx, r.Clone()); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (t tee) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t tee) WithGroup(name string) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// After returns up to limit entries logged after seq, oldest first, and the sequence
// number of the newest entry the ring holds (seq itself when it holds nothing newer).
func (r *Ring) After(seq uint64, limit int) ([]Entry, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.entries)
	var out []Entry
	for i := 0; i < n; i++ {
		// Oldest first: from next round the ring.
		e := r.entries[(r.next+i)%n]
		if e.Seq > seq && len(out) < limit {
			out = append(out, e)
		}
	}
	if r.seq > seq {
		seq = r.seq
	}
	return out, seq
}
