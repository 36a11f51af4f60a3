package file

import (
	"crypto/sha256"
	"io"
	"os"

	"wharf/internal/digest"
	"wharf/internal/durable"
)

const (
	// pipelinedFrom is the size from which a document is copied with its digest taken on
	// another core: below it, the simple copy costs less than the goroutine.
	pipelinedFrom = 8 << 20
	// copyChunk is the unit of a large copy, so a large document costs a few megabytes
	// whatever its size.
	copyChunk = 1 << 20
	// writebackEvery is how much of the file is written before its write-back starts, so
	// the flush that makes it durable waits for the tail only.
	writebackEvery = 8 << 20
)

// copyDocument copies src into f and, when digested, returns the SHA-256 of what it
// copied (nil otherwise). A document of size bytes from pipelinedFrom on is copied in
// chunks whose digest is taken on another core while they are written, and its pages go
// to disk as it is written; a smaller one goes through one buffer.
func copyDocument(f *os.File, src io.Reader, size int64, digested bool) (int64, []byte, error) {
	if size < pipelinedFrom {
		if !digested {
			n, err := io.Copy(f, src)
			return n, nil, err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(f, h), src)
		return n, h.Sum(nil), err
	}
	var d *digest.Async
	if digested {
		d = digest.NewAsync()
		defer d.Stop()
	}
	b := make([]byte, copyChunk)
	var written, flushed int64
	for {
		n, rerr := io.ReadFull(src, b)
		if n > 0 {
			if d != nil {
				d.Write(b[:n])
			}
			if _, err := f.Write(b[:n]); err != nil {
				return written, nil, err
			}
			written += int64(n)
			if written-flushed >= writebackEvery {
				durable.StartWriteback(f, flushed, written-flushed)
				flushed = written
			}
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			if d == nil {
				return written, nil, nil
			}
			return written, d.Sum(), nil
		default:
			return written, nil, rerr
		}
	}
}
