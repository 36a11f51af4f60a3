package cms

import (
	"errors"
	"io"
)

// octetReader streams the content of an OCTET STRING (or an implicitly
// tagged one) whose header was just read, whether it is one primitive value
// or a constructed value made of chunks, nested to any depth.
type octetReader struct {
	b      *berReader
	frames []berFrame
	left   int64 // bytes left in the current primitive chunk
	eof    bool
}

func newOctetReader(b *berReader, h berHeader) *octetReader {
	o := &octetReader{b: b}
	if h.constructed {
		o.frames = []berFrame{b.enter(h)}
	} else {
		o.left = h.length
		if h.length == 0 {
			o.eof = true
		}
	}
	return o
}

func (o *octetReader) Read(p []byte) (int, error) {
	for o.left == 0 {
		if o.eof {
			return 0, io.EOF
		}
		if err := o.advance(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > o.left {
		p = p[:o.left]
	}
	n, err := o.b.r.Read(p)
	o.b.pos += int64(n)
	o.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if o.left == 0 && len(o.frames) == 0 {
		o.eof = true
	}
	return n, err
}

// advance moves to the next non-empty chunk or to the end.
func (o *octetReader) advance() error {
	for len(o.frames) > 0 {
		top := o.frames[len(o.frames)-1]
		ok, err := o.b.more(top)
		if err != nil {
			return err
		}
		if !ok {
			o.frames = o.frames[:len(o.frames)-1]
			continue
		}
		h, err := o.b.readHeader()
		if err != nil {
			return err
		}
		if !h.is(classUniversal, tagOctetString) {
			return errors.New("constructed OCTET STRING holds another type")
		}
		if h.constructed {
			if len(o.frames) >= maxBERDepth {
				return errors.New("nesting too deep")
			}
			o.frames = append(o.frames, o.b.enter(h))
			continue
		}
		if h.length > 0 {
			o.left = h.length
			return nil
		}
	}
	o.eof = true
	return nil
}
