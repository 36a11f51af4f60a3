package receiver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"os"
	"time"

	"wharf/internal/durable"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/storage"
)

// defaultSpoolAbove is the body size past which a request body is opened in one pass
// as it arrives (spooled to a file on the way) rather than read into memory first:
// below it a file costs more than the memory it saves.
const defaultSpoolAbove = 1 << 20

// requestBody is a request body read to its end: in memory when small, else in a
// temporary file written as the body arrived.
type requestBody struct {
	mem  []byte
	file *spoolFile
	size int64
}

// errBodyTooLarge reports a body past the size limit.
var errBodyTooLarge = errors.New("body larger than the size limit")

// bodyStorageError is our failure to keep a body, as opposed to the partner's failure
// to send it.
type bodyStorageError struct{ err error }

func (e *bodyStorageError) Error() string { return "keep the request body: " + e.err.Error() }
func (e *bodyStorageError) Unwrap() error { return e.err }

// bodySource reads a request body, at most limit bytes (one more byte tells a body that
// is too large from one that is exactly at the limit), and keeps the first failure to
// read it, so that it is told from a message that does not decode.
type bodySource struct {
	r     io.Reader
	limit int64
	n     int64
	err   error
}

func (b *bodySource) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.limit-b.n+1 {
		p = p[:b.limit-b.n+1]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		b.err = errBodyTooLarge
		return 0, b.err
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// readHead reads the body's first bytes, at most above+1: ended reports that the body
// ended within above bytes.
func readHead(src io.Reader, contentLength, above int64) (head []byte, ended bool, err error) {
	size := above + 1
	if contentLength >= 0 && contentLength < size {
		// One byte more meets the end of the body in the same read.
		size = contentLength + 1
	}
	head = make([]byte, 0, size)
	for int64(len(head)) <= above {
		if len(head) == cap(head) {
			head = append(head, 0)[:len(head)]
		}
		n, err := src.Read(head[len(head):min(cap(head), int(above)+1)])
		head = head[:len(head)+n]
		if err == io.EOF {
			return head, true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	return head, false, nil
}

// reader reads the body from its start; each call gives a reader of its own. A body in
// a file reads as a storage.FileBody, so the store may take the file instead of a copy.
func (b *requestBody) reader() io.Reader {
	if b.file != nil {
		return b.file.body()
	}
	return bytes.NewReader(b.mem)
}

// unpack opens the message a body in memory holds.
func (b *requestBody) unpack(contentType string, header http.Header, opts mime.UnpackOptions) (*mime.Result, error) {
	return mime.Unpack(contentType, header, b.mem, opts)
}

// close removes the body's file.
func (b *requestBody) close() {
	if b != nil && b.file != nil {
		b.file.remove()
	}
}

// spoolFile is a temporary file a request body or a document is written to as it
// arrives, with its SHA-256 computed on the way. It keeps its name until the request
// ends, so the payload store can link it rather than copy it.
type spoolFile struct {
	f    *os.File
	sum  hash.Hash
	size int64
	err  error // the first failure to write
	// grow uploads the file as it is written, when the payload store is S3; nil else.
	grow *storage.Growing
}

// grower starts uploads that follow a file as it is written (storage.Stores).
type grower interface {
	Grow(ctx context.Context, name string, stage persistence.PayloadStage, length int64) (*storage.Growing, error)
}

// stream makes the file go to the payload store as it is written, as the given stage,
// when the store uploads that way; without it the file is uploaded once complete. length
// is the file's final length when known, else -1.
func (s *spoolFile) stream(ctx context.Context, blobs any, stage persistence.PayloadStage, length int64) {
	if g, ok := blobs.(grower); ok {
		s.grow, _ = g.Grow(ctx, s.f.Name(), stage, length)
	}
}

func newSpoolFile(dir, pattern string) (*spoolFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &spoolFile{f: f, sum: sha256.New()}, nil
}

func (s *spoolFile) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.f.Write(p)
	s.sum.Write(p[:n])
	s.size += int64(n)
	if err != nil {
		s.err = err
	}
	if s.grow != nil {
		s.grow.Grew(s.size)
	}
	return n, err
}

// abandon gives up the file's upload, if any: what it sent is removed.
func (s *spoolFile) abandon() {
	if s.grow != nil {
		s.grow.Abort()
		s.grow = nil
	}
}

// restart empties the file to be written again.
func (s *spoolFile) restart() error {
	// The bytes sent so far are not the file's any more.
	s.abandon()
	if err := s.f.Truncate(0); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s.sum.Reset()
	s.size, s.err = 0, nil
	return nil
}

// body reads the file from its start, as a storage.FileBody with its digest.
func (s *spoolFile) body() *spoolBody {
	return &spoolBody{SectionReader: io.NewSectionReader(s.f, 0, s.size), name: s.f.Name(), sha256: hex.EncodeToString(s.sum.Sum(nil)), grow: s.grow}
}

// remove closes the file and removes its name; a store that linked it keeps its own. An
// upload that followed the file and was not stored is removed.
func (s *spoolFile) remove() {
	s.abandon()
	s.f.Close()
	os.Remove(s.f.Name())
}

// spoolBody is a spooled file read from its start (storage.FileBody).
type spoolBody struct {
	*io.SectionReader
	name   string
	sha256 string
	grow   *storage.Growing
}

// Streamed is the upload that followed the file as it was written, or nil
// (storage.StreamedFileBody).
func (b *spoolBody) Streamed() *storage.Growing { return b.grow }

func (b *spoolBody) OpenFile() (*os.File, error) { return os.Open(b.name) }

// SHA256 is the digest computed while the file was written (storage.DigestedFileBody).
func (b *spoolBody) SHA256() string { return b.sha256 }

// spoolPatterns name the temporary files of requests; staleSpool is the age past which
// one can only be a crash's leftover (no request lasts that long).
var spoolPatterns = []string{"as2-body-*", "as2-payload-*", mime.LayerSpoolPattern}

const staleSpool = 24 * time.Hour

// removeStaleSpools removes the request files in dir last written before cutoff.
func removeStaleSpools(dir string, cutoff time.Time) error {
	return durable.RemoveStale(dir, spoolPatterns, cutoff)
}
