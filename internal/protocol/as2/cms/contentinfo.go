package cms

import (
	"bytes"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
)

// Kind names the CMS content types an AS2 layer carries, spelled as the
// smime-type parameter spells them.
type Kind string

// The kinds Identify recognises.
const (
	KindEnvelopedData     Kind = "enveloped-data"
	KindAuthEnvelopedData Kind = "authEnveloped-data"
	KindCompressedData    Kind = "compressed-data"
	KindSignedData        Kind = "signed-data"
)

// Identify reads the content type of a ContentInfo (BER or DER) without
// decoding the rest. It serves a layer whose smime-type parameter is missing
// or wrong.
func Identify(data []byte) (Kind, error) {
	b := newBERReader(bytes.NewReader(data))
	oid, err := openContentInfo(b)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case oid.Equal(oidEnvelopedData):
		return KindEnvelopedData, nil
	case oid.Equal(oidAuthEnvelopedData):
		return KindAuthEnvelopedData, nil
	case oid.Equal(oidCompressedData):
		return KindCompressedData, nil
	case oid.Equal(oidSignedData):
		return KindSignedData, nil
	}
	return "", fmt.Errorf("%w: content type %s", ErrUnsupportedAlgorithm, oid)
}

// openContentInfo reads ContentInfo's SEQUENCE header, its content type and
// the header of the [0] EXPLICIT content, leaving b at the inner value.
func openContentInfo(b *berReader) (asn1.ObjectIdentifier, error) {
	h, err := b.readHeader()
	if err != nil {
		return nil, err
	}
	if !h.is(classUniversal, tagSequence) || !h.constructed {
		return nil, errors.New("not a ContentInfo")
	}
	oid, err := readOID(b)
	if err != nil {
		return nil, err
	}
	h, err = b.readHeader()
	if err != nil {
		return nil, err
	}
	if !h.is(classContext, 0) || !h.constructed {
		return nil, errors.New("ContentInfo without content")
	}
	return oid, nil
}

func readOID(b *berReader) (asn1.ObjectIdentifier, error) {
	h, der, err := b.readElement(1024)
	if err != nil {
		return nil, err
	}
	if !h.is(classUniversal, tagOID) {
		return nil, errors.New("expected an OBJECT IDENTIFIER")
	}
	var oid asn1.ObjectIdentifier
	if _, err := asn1.Unmarshal(der, &oid); err != nil {
		return nil, err
	}
	return oid, nil
}

// expect reads a header and checks its class, tag and form.
func expect(b *berReader, class, tag int, constructed bool) (berHeader, error) {
	h, err := b.readHeader()
	if err != nil {
		return h, err
	}
	if !h.is(class, tag) || h.constructed != constructed {
		return h, fmt.Errorf("unexpected tag [%d/%d], want [%d/%d]", h.class, h.tag, class, tag)
	}
	return h, nil
}

// readInt reads a small INTEGER.
func readInt(b *berReader) (int, error) {
	h, der, err := b.readElement(64)
	if err != nil {
		return 0, err
	}
	if !h.is(classUniversal, tagInteger) {
		return 0, errors.New("expected an INTEGER")
	}
	var v int
	if _, err := asn1.Unmarshal(der, &v); err != nil {
		return 0, err
	}
	return v, nil
}

func contentInfo(oid asn1.ObjectIdentifier, inner []byte) []byte {
	return derSequence(mustMarshal(oid), derExplicit(0, inner))
}

func mustMarshal(v any) []byte {
	b, err := asn1.Marshal(v)
	if err != nil {
		panic(err) // only called with values that always encode
	}
	return b
}

// limitWriter fails once more than n bytes are written through it.
type limitWriter struct {
	w     io.Writer
	n     int64
	limit int64
	err   error // the last error of w
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n+int64(len(p)) > l.limit {
		return 0, &DecompressionLimitError{Limit: l.limit}
	}
	n, err := l.w.Write(p)
	l.n += int64(n)
	if err != nil {
		l.err = err
	}
	return n, err
}
