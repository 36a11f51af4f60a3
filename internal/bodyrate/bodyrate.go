// Package bodyrate keeps a client that sends its request body slowly, or stops sending
// it, from holding a connection and a handler: reading the body has a deadline that
// moves with it. Each read must bring bytes within the idle time-out, and once the
// idle time-out has passed since the body began, the body must keep up an average
// rate. A body that falls behind fails to read with ErrTooSlow, and the connection's
// read deadline stays where it fell due, so net/http does not wait for the rest either.
package bodyrate

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Limits is how slowly a request body may arrive.
type Limits struct {
	// Idle is the longest wait for the next bytes, and the grace before MinRate counts.
	Idle time.Duration
	// MinRate is the average rate in bytes a second the body must keep up past Idle;
	// zero sets no minimum.
	MinRate int64
	// Whole bounds reading the whole request, as http.Server.ReadTimeout does; zero
	// sets no bound.
	Whole time.Duration
}

// ErrTooSlow reports a body that fell behind its Limits.
var ErrTooSlow = errors.New("request body arrived too slowly")

// Handler paces the body of every request that has one (see Guard).
func Handler(next http.Handler, l Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, Guard(w, r, l))
	})
}

// Guard returns a shallow copy of r whose body is read under l, and sets the first
// deadline at once, so a body the handler leaves unread is not waited for when
// net/http drains it. The server keeps r with its own body, whose accounting decides
// what is drained after the handler. A request without a body is returned as it is:
// its connection keeps the server's deadlines (a long-lived response, such as an event
// stream, must not be cut by them).
func Guard(w http.ResponseWriter, r *http.Request, l Limits) *http.Request {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r
	}
	now := time.Now()
	p := &paced{body: r.Body, rc: http.NewResponseController(w), start: now, l: l}
	if l.Whole > 0 {
		p.until = now.Add(l.Whole)
	}
	p.setDeadline(now)
	paced := new(http.Request)
	*paced = *r
	paced.Body = p
	return paced
}

// paced is a request body read under Limits.
type paced struct {
	body  io.ReadCloser
	rc    *http.ResponseController
	l     Limits
	start time.Time
	until time.Time // zero: no bound on the whole request
	n     int64
	done  bool
}

func (p *paced) Read(b []byte) (int, error) {
	if !p.done {
		p.setDeadline(time.Now())
	}
	n, err := p.body.Read(b)
	p.n += int64(n)
	switch {
	case err == io.EOF && !p.done:
		// The body is in: what follows (handling it, net/http's watch for the
		// client going away) keeps only the bound on the whole request.
		p.done = true
		_ = p.rc.SetReadDeadline(p.until)
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return n, fmt.Errorf("%w: %d bytes in %s", ErrTooSlow, p.n, time.Since(p.start).Round(time.Millisecond))
	}
	return n, err
}

func (p *paced) Close() error { return p.body.Close() }

// setDeadline sets the connection's read deadline for the next read: within Idle of
// now, no later than the rate allows for the bytes read so far, and within the bound
// on the whole request.
func (p *paced) setDeadline(now time.Time) {
	d := now.Add(p.l.Idle)
	if p.l.MinRate > 0 {
		due := p.start.Add(p.l.Idle + time.Duration(float64(p.n)/float64(p.l.MinRate)*float64(time.Second)))
		if due.Before(d) {
			d = due
		}
	}
	if !p.until.IsZero() && p.until.Before(d) {
		d = p.until
	}
	// A connection that cannot take deadlines (HTTP/2, a test recorder) keeps the
	// server's own.
	_ = p.rc.SetReadDeadline(d)
}
