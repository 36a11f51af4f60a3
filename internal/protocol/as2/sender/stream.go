package sender

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"wharf/internal/protocol/as2/mime"
)

// streamThreshold is the document size from which a message is built while it is sent
// (mime.Stream) rather than in memory. Below it a message is built whole, as it always
// was: DER lengths, a Content-Length, the bytes the interop tests pin; holding a few
// megabytes twice per attempt costs little. From it on an attempt holds a few chunks
// of the message whatever its size.
const streamThreshold = 8 << 20

// maxGCMMessage is the largest document sent with AES-GCM. A GCM envelope cannot be
// streamed (its tag covers all of the ciphertext), so the document, its entity and the
// envelope are held in memory at once; larger documents are refused, to keep an
// attempt's memory bounded.
const maxGCMMessage = 64 << 20

// Build faults of a streamed message: what went wrong on our side while a body was
// built, as opposed to the transport failing under it.
var (
	errTooLarge = errors.New("the document exceeds the partner's limit")
	errReadDoc  = errors.New("cannot read the document")
	errRecord   = errors.New("cannot record the AS2 message")
)

// streamed is a message too large to build in memory: its body is built from the
// stored document each time the transport asks for it, under a fresh content key, or,
// for a partner that refuses chunked requests, built once into a spool file and sent
// from there with a Content-Length.
type streamed struct {
	stream *mime.Stream
	open   func(context.Context) (io.ReadCloser, error)
	limit  int64 // the partner's limit in bytes; 0 for none
	// record stores the MICs as soon as they are known, before the body's last byte:
	// a partner's receipt, sync or async, is judged against what the record holds.
	record func(mime.MICs) error

	spoolPath string // the body built in advance; "" when built while sent
	spoolSize int64

	mu    sync.Mutex
	mics  *mime.MICs
	fault error // the first build fault (errTooLarge, errReadDoc, errRecord, …)
}

// writeBody builds one body into w, reading the document from the store again.
func (m *streamed) writeBody(ctx context.Context, w io.Writer) error {
	doc, err := m.open(ctx)
	if err != nil {
		return m.failed(fmt.Errorf("%w: %w", errReadDoc, err))
	}
	defer doc.Close()
	src := &sizeGuard{r: doc, limit: m.limit}
	_, err = m.stream.WriteBody(w, src, m.known)
	switch {
	case err == nil:
		return nil
	case src.err != nil:
		return m.failed(src.err)
	case errors.Is(err, errRecord), errors.Is(err, mime.ErrBoundaryInContent):
		return m.failed(err)
	}
	return err // the transport's: the request failed under the body
}

// known keeps the MICs for the response and has them recorded.
func (m *streamed) known(mics mime.MICs) error {
	m.mu.Lock()
	m.mics = &mics
	m.mu.Unlock()
	if m.record == nil {
		return nil
	}
	if err := m.record(mics); err != nil {
		return fmt.Errorf("%w: %w", errRecord, err)
	}
	return nil
}

func (m *streamed) failed(err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fault == nil {
		m.fault = err
	}
	return err
}

// result is the MICs of the body sent and the first build fault.
func (m *streamed) result() (*mime.MICs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mics, m.fault
}

// spool builds the body into a file in dir, for a partner that takes no chunked
// request, and returns its MICs.
func (m *streamed) spool(ctx context.Context, dir string) (mime.MICs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return mime.MICs{}, fmt.Errorf("spool directory: %w", err)
	}
	f, err := os.CreateTemp(dir, spoolPattern)
	if err != nil {
		return mime.MICs{}, fmt.Errorf("spool file: %w", err)
	}
	m.spoolPath = f.Name()
	bw := bufio.NewWriterSize(f, 256<<10)
	err = m.writeBody(ctx, bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(m.spoolPath); err == nil {
			m.spoolSize = st.Size()
		}
	}
	mics, fault := m.result()
	if fault != nil {
		err = fault
	}
	if err != nil {
		return mime.MICs{}, err
	}
	return *mics, nil
}

// spoolPattern names spool files; staleSpool is the age from which one is left over
// from a process that ended during an attempt (an attempt lasts a request timeout at
// most, minutes).
const (
	spoolPattern = "as2-send-*.body"
	staleSpool   = 24 * time.Hour
)

// removeStaleSpools deletes the spool files in dir that a process which ended during an
// attempt left behind; a spool of another process's running attempt is younger.
func removeStaleSpools(dir string, now time.Time, log *slog.Logger) {
	names, _ := filepath.Glob(filepath.Join(dir, spoolPattern))
	for _, name := range names {
		st, err := os.Stat(name)
		if err != nil || now.Sub(st.ModTime()) < staleSpool {
			continue
		}
		if err := os.Remove(name); err != nil {
			log.Warn("remove a stale AS2 spool file", "file", name, "error", err)
		}
	}
}

// cleanup removes the spool file.
func (m *streamed) cleanup() {
	if m.spoolPath != "" {
		_ = os.Remove(m.spoolPath)
	}
}

// setBody gives req the message's body: the spool file with its length, or a body built
// as the transport reads it, sent chunked.
func (m *streamed) setBody(ctx context.Context, req *http.Request) (stop func()) {
	if m.spoolPath != "" {
		open := func() (io.ReadCloser, error) { return os.Open(m.spoolPath) }
		body, err := open()
		if err != nil {
			// The transport reports it as the request's failure.
			body = io.NopCloser(errReader{err: fmt.Errorf("%w: spool file: %w", errReadDoc, err)})
		}
		req.Body, req.GetBody, req.ContentLength = body, open, m.spoolSize
		return func() {}
	}
	req.ContentLength = -1
	return setPipeBody(req, func(w io.Writer) error { return m.writeBody(ctx, w) })
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// sizeGuard reads the document, failing once it yields more than limit bytes (when
// limit is set), and keeps a read error, which is the storage's fault rather than the
// message's.
type sizeGuard struct {
	r     io.Reader
	n     int64
	limit int64
	err   error
}

func (g *sizeGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.n += int64(n)
	if g.limit > 0 && g.n > g.limit {
		g.err = errTooLarge
		return n, g.err
	}
	if err != nil && err != io.EOF {
		g.err = fmt.Errorf("%w: %w", errReadDoc, err)
		return n, g.err
	}
	return n, err
}
