package receiver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"

	"wharf/internal/protocol/as2/mime"
)

// defaultSpoolAbove is the body size past which a request body goes to a temporary
// file: below it a file costs more than the memory it saves.
const defaultSpoolAbove = 1 << 20

// requestBody is a request body read to its end: in memory when small, else in a
// temporary file, so that a large message is never held whole while its layers are
// opened and stored.
type requestBody struct {
	mem  []byte
	file *os.File
	size int64
	// removed is set once the file's name is gone; an open file can be unlinked on
	// Unix, so a crash leaves nothing behind.
	removed bool
}

// errBodyTooLarge reports a body past the size limit.
var errBodyTooLarge = errors.New("body larger than the size limit")

// bodyStorageError is our failure to keep a body, as opposed to the partner's failure
// to send it.
type bodyStorageError struct{ err error }

func (e *bodyStorageError) Error() string { return "keep the request body: " + e.err.Error() }
func (e *bodyStorageError) Unwrap() error { return e.err }

// spoolBody reads the whole body, at most limit bytes (one more byte tells a body that
// is too large from one that is exactly at the limit), into memory up to above bytes
// and past that into a temporary file in dir.
func spoolBody(r io.Reader, contentLength, limit, above int64, dir string) (*requestBody, error) {
	b := &requestBody{}
	var mem bytes.Buffer
	if contentLength > 0 && contentLength <= min(limit, above) {
		mem.Grow(int(contentLength))
	}
	chunk := int64(64 << 10)
	if contentLength >= 0 && contentLength < chunk {
		// One byte more meets the end of the body in the same read.
		chunk = contentLength + 1
	}
	buf := make([]byte, chunk)
	src := io.LimitReader(r, limit+1)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			b.size += int64(n)
			if b.size > limit {
				b.close()
				return nil, errBodyTooLarge
			}
			if err := b.write(&mem, buf[:n], above, dir); err != nil {
				b.close()
				return nil, &bodyStorageError{err}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			b.close()
			return nil, rerr
		}
	}
	if b.file == nil {
		b.mem = mem.Bytes()
	}
	return b, nil
}

// write appends p to the body, moving what mem holds to a file once the body grows past
// above bytes.
func (b *requestBody) write(mem *bytes.Buffer, p []byte, above int64, dir string) error {
	if b.file == nil && b.size <= above {
		mem.Write(p)
		return nil
	}
	if b.file == nil {
		f, err := os.CreateTemp(dir, "as2-body-*")
		if err != nil {
			return err
		}
		b.file = f
		b.removed = os.Remove(f.Name()) == nil
		if _, err := f.Write(mem.Bytes()); err != nil {
			return err
		}
		*mem = bytes.Buffer{}
	}
	_, err := b.file.Write(p)
	return err
}

// reader reads the body from its start; each call gives a reader of its own.
func (b *requestBody) reader() io.Reader {
	if b.file != nil {
		return io.NewSectionReader(b.file, 0, b.size)
	}
	return bytes.NewReader(b.mem)
}

// unpack opens the message the body holds: a body in memory in place, one in a file
// as it is read.
func (b *requestBody) unpack(contentType string, header http.Header, opts mime.UnpackOptions) (*mime.Result, error) {
	if b.file == nil {
		return mime.Unpack(contentType, header, b.mem, opts)
	}
	return mime.UnpackReader(contentType, header, b.reader(), b.size, opts)
}

// close releases the body's file.
func (b *requestBody) close() {
	if b == nil || b.file == nil {
		return
	}
	b.file.Close()
	if !b.removed {
		os.Remove(b.file.Name())
	}
}
