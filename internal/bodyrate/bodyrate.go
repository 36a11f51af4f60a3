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

// Handler paces the body of every request that has one (see guard), and gives up an
// unread body once the answer begins (see answerFirst).
func Handler(next http.Handler, l Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = guard(w, r, l)
		if p, ok := r.Body.(*paced); ok {
			w = &answerFirst{ResponseWriter: w, body: p}
		}
		next.ServeHTTP(w, r)
	})
}

// answerFirst is the ResponseWriter of a request whose handler may answer before it
// reads the body (a refusal, a sign-in page). net/http then drains what is left of the
// body before it writes the answer, to keep the connection; a client that stopped
// sending would hold the answer back until the body's deadline. So once the answer
// begins, an unread body is given up at once: net/http closes the connection instead.
type answerFirst struct {
	http.ResponseWriter
	body    *paced
	started bool
}

func (a *answerFirst) WriteHeader(code int) {
	a.begin(code)
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerFirst) Write(b []byte) (int, error) {
	a.begin(http.StatusOK)
	return a.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (a *answerFirst) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *answerFirst) begin(code int) {
	if a.started || code < 200 {
		return
	}
	a.started = true
	a.body.abandon()
}

// guard returns a shallow copy of r whose body is read under l, and sets the first
// deadline at once, so a body the handler leaves unread is not waited for when
// net/http drains it. The server keeps r with its own body, whose accounting decides
// what is drained after the handler. A request without a body is returned as it is:
// its connection keeps the server's deadlines (a long-lived response, such as an event
// stream, must not be cut by them).
func guard(w http.ResponseWriter, r *http.Request, l Limits) *http.Request {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r
	}
	now := time.Now()
	p := &paced{body: r.Body, rc: http.NewResponseController(w), start: now, l: l, size: r.ContentLength}
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
	size  int64     // the declared length; -1 when unknown
	n     int64
	done  bool // read whole
}

func (p *paced) Read(b []byte) (int, error) {
	if !p.done {
		p.setDeadline(time.Now())
	}
	n, err := p.body.Read(b)
	p.n += int64(n)
	switch {
	case !p.done && (err == io.EOF || p.size >= 0 && p.n >= p.size):
		// The body is in. net/http clears the deadline when it starts to watch
		// for the client going away, so handling the body is not cut short. A
		// reader that stops at the declared length without asking for the end
		// (a JSON decoder) counts as having read it whole.
		p.done = true
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return n, fmt.Errorf("%w: %d bytes in %s", ErrTooSlow, p.n, time.Since(p.start).Round(time.Millisecond))
	}
	return n, err
}

func (p *paced) Close() error { return p.body.Close() }

// abandon makes any further wait for the body fail at once, unless it was read whole.
func (p *paced) abandon() {
	if !p.done {
		_ = p.rc.SetReadDeadline(time.Now())
	}
}

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
