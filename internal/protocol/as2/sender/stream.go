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
	"sync"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/durable"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
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
// attempt's memory bounded. The envelope's content is the document with its MIME
// headers and, when signed, the signature part, so the document leaves room for those
// under the bound a receiver applies to the content (cms.MaxAEADContent).
const maxGCMMessage = cms.MaxAEADContent - gcmEnvelopeRoom

// gcmEnvelopeRoom is what the layers around a document take at most: headers and a
// signature part with its certificate chain (receivers bound that part at 1 MiB).
const gcmEnvelopeRoom = 1 << 20

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

// gcmTooLarge explains the refusal of a GCM message above maxGCMMessage.
func gcmTooLarge(size int64, partner persistence.PartyName) string {
	return fmt.Sprintf("the document (%d bytes) is larger than %d MiB, the largest sent with AES-GCM, whose envelope is built in memory and holds at most %d MiB with its headers and signature; choose an AES-CBC cipher for partner %s",
		size, maxGCMMessage>>20, cms.MaxAEADContent>>20, partner)
}

// prepareStream readies a message too large to build in memory: built while it is sent,
// or, when the partner refuses chunked requests, built into a spool file now.
func (s *Sender) prepareStream(ctx context.Context, a delivery.Attempt, rem profile.Remote, opts mime.BuildOptions, msg outgoing) (outgoing, delivery.Result, bool) {
	st, err := mime.NewStream(string(a.Message.OriginalFileName), opts)
	if err != nil {
		return outgoing{}, delivery.Permanent(delivery.ClassInternal, fmt.Errorf("cannot build the AS2 message: %v", err)), false
	}
	m := &streamed{stream: st, open: a.Open, limit: int64(rem.MaxMessageSizeMiB) << 20}
	msg.streamed = m
	if rem.Chunked != profile.ChunkedNever {
		return msg, delivery.Result{}, true
	}
	mics, err := m.spool(ctx, s.tempDir)
	if err != nil {
		m.cleanup()
		return outgoing{}, s.buildFault(ctx, rem, err), false
	}
	if rem.MDNMode != profile.MDNNone {
		msg.rec.ExpectedMICs, msg.rec.fallbackMICs = builtMICs(&mics, msg.expected), builtMICs(&mics, msg.fallback)
	}
	return msg, delivery.Result{}, true
}

// buildFault is the result of a streamed message whose build failed on our side: a
// document larger than the partner's limit is permanent, anything else is tried again.
func (s *Sender) buildFault(ctx context.Context, rem profile.Remote, err error) delivery.Result {
	switch {
	case errors.Is(err, errTooLarge):
		return delivery.Permanent(delivery.ClassInternal, fmt.Errorf("the document exceeds the partner's limit of %d MiB", rem.MaxMessageSizeMiB))
	case errors.Is(err, errReadDoc):
		s.log.WarnContext(ctx, "read the document", "error", err)
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot read the document"))
	case errors.Is(err, errRecord):
		s.log.ErrorContext(ctx, "record the MICs of an AS2 message", "error", err)
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot record the AS2 message"))
	}
	s.log.ErrorContext(ctx, "build an AS2 message", "error", err)
	return delivery.Transient(delivery.ClassInternal, errors.New("cannot build the AS2 message"))
}

// streamedResult takes over from a streamed message once the request is done (err is the
// request's): the record gets the MICs a body built while sent was built with, and a
// request that failed because the build (or the spool file) did is that failure (failed).
func (s *Sender) streamedResult(ctx context.Context, rec *OutboundRecord, rem profile.Remote, msg outgoing, err error) (res delivery.Result, failed bool) {
	m := msg.streamed
	if m == nil {
		return delivery.Result{}, false
	}
	mics, fault := m.result()
	if m.spoolPath == "" && mics != nil && rec.MDNMode != profile.MDNNone {
		rec.ExpectedMICs, rec.fallbackMICs = builtMICs(mics, msg.expected), builtMICs(mics, msg.fallback)
	}
	if err == nil || fault == nil {
		return delivery.Result{}, false
	}
	res = s.buildFault(ctx, rem, fault)
	outcome := OutcomeRetry
	if res.Kind == persistence.OutcomeFailed {
		outcome = OutcomeFailed
	}
	s.finish(ctx, rec, sendResult{Outcome: outcome, Reason: res.Err.Error()})
	return res, true
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
	if err := durable.RemoveStale(dir, []string{spoolPattern}, now.Add(-staleSpool)); err != nil {
		log.Warn("remove stale AS2 spool files", "error", err)
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
			// The request fails reading it, and the fault makes it ours, not the partner's.
			body = io.NopCloser(errReader{err: m.failed(fmt.Errorf("%w: spool file: %w", errReadDoc, err))})
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
