package mime

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"mime/quotedprintable"
	"strings"

	"wharf/internal/protocol/as2/cms"
)

// The readers and writers UnpackStream joins its layers with.

// ratioWriter passes inflated bytes on while they stay within the limits.
type ratioWriter struct {
	w     io.Writer
	in    *countingReader
	ratio int64
	limit int64
	n     int64
}

func (r *ratioWriter) Write(p []byte) (int, error) {
	r.n += int64(len(p))
	allowed := r.limit
	if r.in.n <= (r.limit-decompressionFloor)/r.ratio {
		allowed = min(allowed, decompressionFloor+r.ratio*r.in.n)
	}
	if r.n > allowed {
		return 0, &cms.DecompressionLimitError{Limit: allowed}
	}
	return r.w.Write(p)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// sinkWriter keeps the first failure of the caller's writer, which is ours, not the
// message's.
type sinkWriter struct {
	w   io.Writer
	err error
}

func (s *sinkWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// digestSet digests a signed part with several algorithms and notes whether it has a
// line feed without a carriage return before it.
type digestSet struct {
	hs     map[cms.DigestAlgorithm]hash.Hash
	bareLF bool
	prevCR bool
}

func (d *digestSet) Write(p []byte) (int, error) {
	for _, h := range d.hs {
		h.Write(p)
	}
	if !d.bareLF && len(p) > 0 {
		for i := bytes.IndexByte(p, '\n'); i >= 0; {
			if i == 0 && !d.prevCR || i > 0 && p[i-1] != '\r' {
				d.bareLF = true
				break
			}
			j := bytes.IndexByte(p[i+1:], '\n')
			if j < 0 {
				break
			}
			i += 1 + j
		}
		d.prevCR = p[len(p)-1] == '\r'
	}
	return len(p), nil
}

func (d *digestSet) sums() map[cms.DigestAlgorithm][]byte {
	out := make(map[cms.DigestAlgorithm][]byte, len(d.hs))
	for a, h := range d.hs {
		out[a] = h.Sum(nil)
	}
	return out
}

// crlfReader turns bare LF line endings into CRLF.
type crlfReader struct {
	r       io.Reader
	prevCR  bool
	pending []byte
	buf     []byte
	out     []byte // holds pending; reused for every read
}

func (c *crlfReader) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		if c.buf == nil {
			c.buf = make([]byte, 32<<10)
		}
		n, err := c.r.Read(c.buf)
		if n == 0 {
			return 0, err
		}
		out := c.out[:0]
		for _, b := range c.buf[:n] {
			if b == '\n' && !c.prevCR {
				out = append(out, '\r')
			}
			out = append(out, b)
			c.prevCR = b == '\r'
		}
		c.out, c.pending = out, out
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// decodingReader undoes a Content-Transfer-Encoding as the body is read. Base64 may
// carry white space and lack its padding, as DecodeTransferEncoding accepts.
func decodingReader(cte string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "", "7bit", "8bit", "binary":
		return r, nil
	case "base64":
		src := &trackingReader{r: r}
		return &decodeErrors{r: base64.NewDecoder(base64.RawStdEncoding, &base64Filter{r: src}), src: src, name: "base64"}, nil
	case "quoted-printable":
		src := &trackingReader{r: r}
		return &decodeErrors{r: quotedprintable.NewReader(src), src: src, name: "quoted-printable"}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrTransferEncoding, cte)
}

// base64Filter drops white space and the padding from base64 text; text after the
// padding is refused, as DecodeTransferEncoding refuses it.
type base64Filter struct {
	r      io.Reader
	padded bool
}

func (f *base64Filter) Read(p []byte) (int, error) {
	for {
		n, err := f.r.Read(p)
		k := 0
		for _, c := range p[:n] {
			switch {
			case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			case c == '=':
				f.padded = true
			case f.padded:
				return 0, fmt.Errorf("%w: base64: text after the padding", ErrTransferEncoding)
			default:
				p[k] = c
				k++
			}
		}
		if k > 0 || err != nil {
			return k, err
		}
	}
}

// decodeErrors marks a decoder's own errors as ErrTransferEncoding; src keeps the errors
// of the reader below the decoder, which pass as they are.
type decodeErrors struct {
	r    io.Reader
	src  *trackingReader
	name string
}

func (d *decodeErrors) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF && d.src.err == nil {
		err = fmt.Errorf("%w: %s: %w", ErrTransferEncoding, d.name, err)
	}
	return n, err
}
