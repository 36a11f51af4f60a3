package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// receiver is the in-house system an http-poster posts to: it answers 204 after a fixed
// delay, as a system that does some work per document would, and records when each
// message arrived and how often, by the message id in the Idempotency-Key
// (wharf-<message id>-<delivery id>). Until its gate opens it holds every post, so a
// backlog can be built while the plugin processes run and are already busy.
type receiver struct {
	delay  time.Duration
	srv    *http.Server
	url    string
	gate   chan struct{}
	opened time.Time

	mu       sync.Mutex
	arrived  map[int64]time.Time // first arrival
	count    map[int64]int
	strange  []string // keys that name no message
	arrivals chan struct{}
}

// startReceiver listens on a free loopback port.
func startReceiver(delay time.Duration) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: listen: %w", err)
	}
	r := &receiver{delay: delay, url: "http://" + ln.Addr().String() + "/in",
		arrived: map[int64]time.Time{}, count: map[int64]int{}, arrivals: make(chan struct{}, 1), gate: make(chan struct{})}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	select {
	case <-r.gate:
	case <-req.Context().Done():
		return
	}
	t := time.NewTimer(r.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
		return
	}
	r.record(req.Header.Get("Idempotency-Key"), time.Now())
	select {
	case r.arrivals <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// record counts one answered post by its Idempotency-Key.
func (r *receiver) record(key string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, err := messageIDOf(key)
	if err != nil {
		r.strange = append(r.strange, key)
		return
	}
	if r.count[id] == 0 {
		r.arrived[id] = at
	}
	r.count[id]++
}

// open lets the posts through, those held and those to come, and returns when.
func (r *receiver) open() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opened = time.Now()
	close(r.gate)
	return r.opened
}

// messageIDOf reads the message id out of an http-poster's Idempotency-Key.
func messageIDOf(key string) (int64, error) {
	rest, ok := strings.CutPrefix(key, "wharf-")
	mid, _, ok2 := strings.Cut(rest, "-")
	if !ok || !ok2 {
		return 0, fmt.Errorf("idempotency key %q is not wharf-<message>-<delivery>", key)
	}
	return strconv.ParseInt(mid, 10, 64)
}

// distinct is how many messages arrived at least once.
func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrived)
}

// waitFor waits until n distinct messages arrived or ctx ends.
func (r *receiver) waitFor(ctx context.Context, n int) error {
	for {
		if got := r.distinct(); got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages arrived before the time-out", r.distinct(), n)
		case <-r.arrivals:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkExactlyOnce holds the arrivals to the messages sent: each arrived once, and
// nothing else arrived.
func (r *receiver) checkExactlyOnce(sent map[int64]bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if len(r.strange) > 0 {
		errs = append(errs, fmt.Errorf("%d posts named no message, e.g. %q", len(r.strange), r.strange[0]))
	}
	twice, missing, unknown := 0, 0, 0
	for id, c := range r.count {
		if !sent[id] {
			unknown++
		} else if c > 1 {
			twice++
		}
	}
	for id := range sent {
		if r.count[id] == 0 {
			missing++
		}
	}
	if twice > 0 {
		errs = append(errs, fmt.Errorf("%d messages arrived more than once", twice))
	}
	if missing > 0 {
		errs = append(errs, fmt.Errorf("%d messages never arrived", missing))
	}
	if unknown > 0 {
		errs = append(errs, fmt.Errorf("%d messages arrived that were never sent", unknown))
	}
	return errors.Join(errs...)
}

func (r *receiver) close() { _ = r.srv.Close() }
