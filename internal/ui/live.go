package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MessageEvents tells the UI which messages changed: the store announces every message
// whose history a commit wrote, and the gateway carries that over the bus.
type MessageEvents interface {
	// SubscribeMessages calls fn with the id of each changed message until cancel is
	// called. fn must not block.
	SubscribeMessages(fn func(messageID int64)) (cancel func(), err error)
}

// NotificationEvents tells the UI that rows of the notification log changed: the notifier
// announces them on the bus (alert.ChangedSubject), and the gateway carries that over.
type NotificationEvents interface {
	// SubscribeNotifications calls fn after each change until cancel is called. fn must
	// not block.
	SubscribeNotifications(fn func()) (cancel func(), err error)
}

const (
	// liveMaxLife ends a stream after a while; the browser reconnects at once, and the
	// reconnection checks the session again, so a disabled user's open page stops.
	liveMaxLife = 10 * time.Minute
	// liveHeartbeat keeps idle streams open through proxies and finds dead clients.
	liveHeartbeat = 25 * time.Second
	// liveWriteTimeout bounds one write to a client that stopped reading.
	liveWriteTimeout = 10 * time.Second
	// livePendingMax bounds the changed ids a stream collects between two renders;
	// past it the stream treats every message as changed.
	livePendingMax = 1024
	// liveRetryMillis is how long a browser waits before it reconnects.
	liveRetryMillis = 3000
)

// hub fans the message events out to the open streams of this process.
type hub struct {
	mu     sync.Mutex
	subs   map[*liveSub]struct{}
	done   chan struct{} // closed by close: every stream ends
	closed bool
	cancel func() // ends the events subscription
}

func newHub() *hub {
	return &hub{subs: map[*liveSub]struct{}{}, done: make(chan struct{})}
}

// liveSub is one stream's view of the events: the ids changed since it last looked,
// coalesced, so a slow stream never holds the publisher up and never misses a change.
type liveSub struct {
	mu   sync.Mutex
	ids  map[int64]struct{}
	all  bool
	wake chan struct{} // capacity 1: "something changed"
}

func (h *hub) publish(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ls := range h.subs {
		ls.mu.Lock()
		if !ls.all {
			if len(ls.ids) >= livePendingMax {
				ls.all, ls.ids = true, nil
			} else {
				ls.ids[id] = struct{}{}
			}
		}
		ls.mu.Unlock()
		select {
		case ls.wake <- struct{}{}:
		default:
		}
	}
}

func (h *hub) subscribe() (*liveSub, func()) {
	ls := &liveSub{ids: map[int64]struct{}{}, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[ls] = struct{}{}
	h.mu.Unlock()
	return ls, func() {
		h.mu.Lock()
		delete(h.subs, ls)
		h.mu.Unlock()
	}
}

// take returns what changed since the last take and starts collecting afresh.
func (ls *liveSub) take() changes {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c := changes{all: ls.all, ids: ls.ids}
	ls.all, ls.ids = false, map[int64]struct{}{}
	return c
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.done)
	cancel := h.cancel
	h.mu.Unlock()
	// Outside the lock: the subscription's callback takes it.
	if cancel != nil {
		cancel()
	}
}

// Close ends every live stream and stops listening for events. The gateway calls it
// when the HTTP server shuts down, which otherwise waits for streams that never end.
func (s *Server) Close() {
	s.live.close()
	s.noteHub.close()
}

// changes is what a stream's render is told: which messages changed, or all of them
// (the first render, or too many to list), whether new log lines came, and whether rows
// of the notification log changed.
type changes struct {
	all           bool
	ids           map[int64]struct{}
	logs          bool
	notifications bool
}

func (c changes) message(id int64) bool {
	if c.all {
		return true
	}
	_, ok := c.ids[id]
	return ok
}

func (c changes) anyMessage() bool { return c.all || len(c.ids) > 0 }

// sseEvent is one server-sent event: htmx's SSE extension swaps Data into the elements
// whose sse-swap names Name.
type sseEvent struct {
	Name string
	Data string
}

// liveStream describes one SSE endpoint.
type liveStream struct {
	messages      bool            // follows message events
	logs          bool            // follows the log ring
	logWake       <-chan struct{} // follows another source of log lines instead of the ring
	notifications bool            // follows the notification log's changes
	every         time.Duration   // least time between two renders, so bursts coalesce
	render        func(ctx context.Context, c changes) ([]sseEvent, error)
}

// serveLive answers an SSE request: one render at once (the page may have been rendered
// before a change the stream did not see yet), then one after changes, at most one per
// ls.every. It returns when the client goes away, the server closes, or liveMaxLife
// passes.
func (s *Server) serveLive(w http.ResponseWriter, r *http.Request, ls liveStream) {
	ctx := r.Context()
	var wake <-chan struct{}
	var sub *liveSub
	if ls.messages {
		var unsub func()
		sub, unsub = s.live.subscribe()
		defer unsub()
		wake = sub.wake
	}
	var logWake <-chan struct{}
	if ls.logs && s.logs != nil {
		var cancel func()
		logWake, cancel = s.logs.Subscribe()
		defer cancel()
	}
	if ls.logWake != nil {
		logWake = ls.logWake
	}

	var noteWake <-chan struct{}
	if ls.notifications {
		noteSub, unsub := s.noteHub.subscribe()
		defer unsub()
		noteWake = noteSub.wake
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a buffering proxy would hold events back
	w.WriteHeader(http.StatusOK)
	out := &sseWriter{w: w, rc: http.NewResponseController(w)}
	if err := out.write(fmt.Sprintf("retry: %d\n\n", liveRetryMillis)); err != nil {
		return
	}

	send := func(c changes) bool {
		evs, err := ls.render(ctx, c)
		if err != nil {
			if ctx.Err() == nil {
				s.log.ErrorContext(ctx, "live update failed", "path", r.URL.Path, "err", err)
			}
			return false
		}
		for _, ev := range evs {
			if err := out.event(ev); err != nil {
				return false
			}
		}
		return true
	}
	if !send(changes{all: true, logs: true, notifications: true}) {
		return
	}
	last := time.Now()

	life := time.NewTimer(liveMaxLife)
	defer life.Stop()
	beat := time.NewTicker(liveHeartbeat)
	defer beat.Stop()
	var hold *time.Timer // waits out ls.every before the next render
	var holdC <-chan time.Time
	defer func() {
		if hold != nil {
			hold.Stop()
		}
	}()
	var pendingMsgs, pendingLogs, pendingNotes bool
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.live.done:
			return
		case <-life.C:
			return
		case <-beat.C:
			if err := out.write(": keep-alive\n\n"); err != nil {
				return
			}
			continue
		case <-wake:
			pendingMsgs = true
		case <-logWake:
			pendingLogs = true
		case <-noteWake:
			pendingNotes = true
		case <-holdC:
			holdC = nil
		}
		if !(pendingMsgs || pendingLogs || pendingNotes) || holdC != nil {
			continue
		}
		if wait := ls.every - time.Since(last); wait > 0 {
			hold = time.NewTimer(wait)
			holdC = hold.C
			continue
		}
		c := changes{logs: pendingLogs}
		if pendingMsgs {
			c = sub.take()
			c.logs = pendingLogs
		}
		c.notifications = pendingNotes
		pendingMsgs, pendingLogs, pendingNotes = false, false, false
		last = time.Now()
		if !send(c) {
			return
		}
	}
}

// sseWriter writes the text/event-stream format and flushes each event out.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (o *sseWriter) write(s string) error {
	// Not every writer supports deadlines (a test recorder); the write is then unbounded.
	_ = o.rc.SetWriteDeadline(time.Now().Add(liveWriteTimeout))
	if _, err := o.w.Write([]byte(s)); err != nil {
		return err
	}
	return o.rc.Flush()
}

// event writes ev with one data line per line of its text. A lone CR ends a line in
// this format too, so line ends are made LF first; no text can end the event early.
func (o *sseWriter) event(ev sseEvent) error {
	var b strings.Builder
	b.WriteString("event: ")
	b.WriteString(ev.Name)
	b.WriteByte('\n')
	data := strings.ReplaceAll(strings.ReplaceAll(ev.Data, "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return o.write(b.String())
}
