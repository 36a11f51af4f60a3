package cms

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ASN.1 classes and the universal tags this package looks at.
const (
	classUniversal   = 0
	classContext     = 2
	tagInteger       = 2
	tagOctetString   = 4
	tagNull          = 5
	tagOID           = 6
	tagSequence      = 16
	tagSet           = 17
	maxBERDepth      = 64
	maxHeaderElement = 4 << 20 // bound for the parts held in memory (recipient infos, attributes)
)

// berHeader is one decoded identifier and length.
type berHeader struct {
	class       int
	tag         int
	constructed bool
	length      int64 // -1: indefinite
}

func (h berHeader) is(class, tag int) bool { return h.class == class && h.tag == tag }

// berReader decodes BER from a stream, keeping track of the offset so that
// definite-length constructed values can be walked without reading ahead.
type berReader struct {
	r   *bufio.Reader
	pos int64
}

func newBERReader(r io.Reader) *berReader {
	if br, ok := r.(*bufio.Reader); ok {
		return &berReader{r: br}
	}
	return &berReader{r: bufio.NewReaderSize(r, 32<<10)}
}

func (b *berReader) readByte() (byte, error) {
	c, err := b.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	b.pos++
	return c, nil
}

func (b *berReader) readFull(p []byte) error {
	n, err := io.ReadFull(b.r, p)
	b.pos += int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func (b *berReader) discard(n int64) error {
	for n > 0 {
		step := n
		if step > 1<<30 {
			step = 1 << 30
		}
		d, err := b.r.Discard(int(step))
		b.pos += int64(d)
		n -= int64(d)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

func (b *berReader) readHeader() (berHeader, error) {
	var h berHeader
	c, err := b.readByte()
	if err != nil {
		return h, err
	}
	h.class = int(c >> 6)
	h.constructed = c&0x20 != 0
	h.tag = int(c & 0x1f)
	if h.tag == 0x1f {
		h.tag = 0
		for i := 0; ; i++ {
			if i == 4 {
				return h, errors.New("tag number too large")
			}
			c, err = b.readByte()
			if err != nil {
				return h, err
			}
			h.tag = h.tag<<7 | int(c&0x7f)
			if c&0x80 == 0 {
				break
			}
		}
	}
	c, err = b.readByte()
	if err != nil {
		return h, err
	}
	switch {
	case c < 0x80:
		h.length = int64(c)
	case c == 0x80:
		if !h.constructed {
			return h, errors.New("indefinite length on a primitive value")
		}
		h.length = -1
	case c == 0xff:
		return h, errors.New("reserved length octet")
	default:
		n := int(c & 0x7f)
		if n > 7 {
			return h, errors.New("length too large")
		}
		for range n {
			c, err = b.readByte()
			if err != nil {
				return h, err
			}
			h.length = h.length<<8 | int64(c)
		}
	}
	return h, nil
}

// berFrame is an open constructed value: its end offset, or -1 when it ends
// with an end-of-contents marker.
type berFrame struct{ end int64 }

func (b *berReader) enter(h berHeader) berFrame {
	if h.length < 0 {
		return berFrame{end: -1}
	}
	return berFrame{end: b.pos + h.length}
}

// more reports whether f has another element, consuming its end-of-contents
// marker when it has none.
func (b *berReader) more(f berFrame) (bool, error) {
	if f.end >= 0 {
		switch {
		case b.pos < f.end:
			return true, nil
		case b.pos == f.end:
			return false, nil
		default:
			return false, errors.New("element overruns its enclosing value")
		}
	}
	p, err := b.r.Peek(2)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	if p[0] == 0 && p[1] == 0 {
		return false, b.discard(2)
	}
	return true, nil
}

// close skips whatever is left of f.
func (b *berReader) close(f berFrame) error {
	for {
		ok, err := b.more(f)
		if err != nil || !ok {
			return err
		}
		h, err := b.readHeader()
		if err != nil {
			return err
		}
		if err := b.skip(h, 0); err != nil {
			return err
		}
	}
}

// skip discards the content of the value whose header was just read.
func (b *berReader) skip(h berHeader, depth int) error {
	if depth > maxBERDepth {
		return errors.New("nesting too deep")
	}
	if h.length >= 0 {
		return b.discard(h.length)
	}
	f := b.enter(h)
	for {
		ok, err := b.more(f)
		if err != nil || !ok {
			return err
		}
		ch, err := b.readHeader()
		if err != nil {
			return err
		}
		if err := b.skip(ch, depth+1); err != nil {
			return err
		}
	}
}

// readDER reads the content of the value whose header was just read and
// returns the whole value in DER form: definite lengths, and constructed
// OCTET STRINGs joined into one primitive string. budget bounds the bytes
// read and is decremented.
func (b *berReader) readDER(h berHeader, budget *int64, depth int) ([]byte, error) {
	if depth > maxBERDepth {
		return nil, errors.New("nesting too deep")
	}
	if !h.constructed {
		if h.length > *budget {
			return nil, errors.New("value larger than allowed")
		}
		*budget -= h.length
		out := make([]byte, 0, 8+h.length)
		out = appendHeader(out, h.class, h.tag, false, int(h.length))
		start := len(out)
		out = out[:start+int(h.length)]
		return out, b.readFull(out[start:])
	}
	if h.length > *budget {
		return nil, errors.New("value larger than allowed")
	}
	joinStrings := h.is(classUniversal, tagOctetString)
	var content bytes.Buffer
	f := b.enter(h)
	for {
		ok, err := b.more(f)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		start := b.pos
		ch, err := b.readHeader()
		if err != nil {
			return nil, err
		}
		*budget -= b.pos - start
		if *budget < 0 {
			return nil, errors.New("value larger than allowed")
		}
		child, err := b.readDER(ch, budget, depth+1)
		if err != nil {
			return nil, err
		}
		if joinStrings {
			if !ch.is(classUniversal, tagOctetString) {
				return nil, errors.New("constructed OCTET STRING holds another type")
			}
			_, body, _ := splitDER(child)
			content.Write(body)
		} else {
			content.Write(child)
		}
	}
	out := appendHeader(nil, h.class, h.tag, !joinStrings, content.Len())
	return append(out, content.Bytes()...), nil
}

// readElement reads the next value in DER form, bounded by limit bytes.
func (b *berReader) readElement(limit int64) (berHeader, []byte, error) {
	start := b.pos
	h, err := b.readHeader()
	if err != nil {
		return h, nil, err
	}
	budget := limit - (b.pos - start)
	der, err := b.readDER(h, &budget, 0)
	return h, der, err
}

// normalizeBER converts one BER value to DER. Trailing line breaks, spaces
// and zero bytes after the value are tolerated; anything else is an error.
func normalizeBER(data []byte) ([]byte, error) {
	b := newBERReader(bytes.NewReader(data))
	_, der, err := b.readElement(int64(len(data)))
	if err != nil {
		return nil, err
	}
	rest := data[b.pos:]
	if len(bytes.Trim(rest, "\r\n\t \x00")) > 0 {
		return nil, fmt.Errorf("%d bytes after the value", len(rest))
	}
	return der, nil
}

// splitDER splits a DER value into its header bytes and content. It returns
// ok=false for input that is not one complete definite-length value.
func splitDER(der []byte) (hdr, content []byte, ok bool) {
	if len(der) < 2 {
		return nil, nil, false
	}
	i := 1
	if der[0]&0x1f == 0x1f {
		for i < len(der) && der[i]&0x80 != 0 {
			i++
		}
		i++
	}
	if i >= len(der) {
		return nil, nil, false
	}
	l := int(der[i])
	i++
	if l&0x80 != 0 {
		n := l & 0x7f
		if n == 0 || n > 4 || i+n > len(der) {
			return nil, nil, false
		}
		l = 0
		for _, c := range der[i : i+n] {
			l = l<<8 | int(c)
		}
		i += n
	}
	if i+l != len(der) || l < 0 {
		return nil, nil, false
	}
	return der[:i], der[i:], true
}

func appendHeader(out []byte, class, tag int, constructed bool, n int) []byte {
	id := byte(class << 6)
	if constructed {
		id |= 0x20
	}
	if tag < 0x1f {
		out = append(out, id|byte(tag))
	} else {
		out = append(out, id|0x1f)
		var t []byte
		for v := tag; v > 0; v >>= 7 {
			t = append([]byte{byte(v & 0x7f)}, t...)
		}
		for i := 0; i < len(t)-1; i++ {
			t[i] |= 0x80
		}
		out = append(out, t...)
	}
	switch {
	case n < 0x80:
		out = append(out, byte(n))
	default:
		var l []byte
		for v := n; v > 0; v >>= 8 {
			l = append([]byte{byte(v)}, l...)
		}
		out = append(out, 0x80|byte(len(l)))
		out = append(out, l...)
	}
	return out
}

// derTLV encodes one DER value from its parts.
func derTLV(class, tag int, constructed bool, parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := appendHeader(make([]byte, 0, n+6), class, tag, constructed, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func derSequence(parts ...[]byte) []byte { return derTLV(classUniversal, tagSequence, true, parts...) }
func derSet(parts ...[]byte) []byte      { return derTLV(classUniversal, tagSet, true, parts...) }
func derOctets(b []byte) []byte          { return derTLV(classUniversal, tagOctetString, false, b) }
func derExplicit(tag int, parts ...[]byte) []byte {
	return derTLV(classContext, tag, true, parts...)
}
