package cms

import (
	"bytes"
	"compress/zlib"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
)

// Compress builds a DER CompressedData ContentInfo (RFC 3274, zlib) of
// content.
func Compress(content []byte) ([]byte, error) {
	var z bytes.Buffer
	c := NewCompressor(&z)
	if _, err := c.Write(content); err != nil {
		return nil, err
	}
	head, err := c.Close()
	if err != nil {
		return nil, err
	}
	return append(head, z.Bytes()...), nil
}

// Compressor writes a CompressedData ContentInfo of content whose length is
// not known in advance. The zlib stream goes to the writer as it is
// produced; its DER header depends on the stream's length, so Close returns
// it, for the caller to put before the stream.
type Compressor struct {
	zw *zlib.Writer
	n  countWriter
}

// compressLevel is zlib's level 2: on EDI text its output is within 1% of the default
// level's (6) at nearly four times the speed, and content that does not compress costs
// the same at both (BenchmarkCompress).
const compressLevel = 2

// NewCompressor compresses into w, at compressLevel: a message built in memory is
// small, and its bytes stay what they have always been.
func NewCompressor(w io.Writer) *Compressor {
	c := &Compressor{n: countWriter{w: w}}
	c.zw = getZlib(compressLevel, &c.n)
	return c
}

// Write compresses p.
func (c *Compressor) Write(p []byte) (int, error) { return c.zw.Write(p) }

// Close ends the zlib stream and returns the DER that precedes it.
func (c *Compressor) Close() ([]byte, error) {
	err := c.zw.Close()
	c.n.w = nil
	putZlib(compressLevel, c.zw)
	c.zw = nil
	if err != nil {
		return nil, err
	}
	return derHead(c.n.n,
		headLevel{tag: tagSequence, constructed: true, before: mustMarshal(oidCompressedData)},
		headLevel{class: classContext, tag: 0, constructed: true},
		headLevel{tag: tagSequence, constructed: true, before: append(mustMarshal(0), derSequence(mustMarshal(oidZlibCompress))...)},
		headLevel{tag: tagSequence, constructed: true, before: mustMarshal(oidData)},
		headLevel{class: classContext, tag: 0, constructed: true},
		headLevel{tag: tagOctetString},
	), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Decompress inflates a CompressedData ContentInfo held in memory; see
// DecompressTo.
func Decompress(data []byte, limit int64) ([]byte, error) {
	var out bytes.Buffer
	if err := DecompressTo(&out, bytes.NewReader(data), limit); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// DecompressTo reads a CompressedData ContentInfo (BER or DER) from r and
// writes the inflated content to w as it is produced. Content that inflates
// past limit bytes stops with a *DecompressionLimitError; what was written
// until then must be discarded, as after any error.
func DecompressTo(w io.Writer, r io.Reader, limit int64) error {
	b := newBERReader(r)
	oid, err := openContentInfo(b)
	if err != nil {
		return malformed(ErrDecompression, "%v", err)
	}
	if !oid.Equal(oidCompressedData) {
		return fmt.Errorf("%w: content type %s is not compressed data", ErrDecompression, oid)
	}
	content, err := openCompressedContent(b)
	if err != nil {
		return err
	}
	zr, err := zlib.NewReader(content)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDecompression, err)
	}
	defer zr.Close()
	lw := &limitWriter{w: w, limit: limit}
	if _, err := io.Copy(lw, zr); err != nil {
		var le *DecompressionLimitError
		switch {
		case errors.As(err, &le):
			return le
		case lw.err != nil && errors.Is(err, lw.err):
			return err // the caller's writer failed, not the content
		}
		return fmt.Errorf("%w: %w", ErrDecompression, err)
	}
	return nil
}

func openCompressedContent(b *berReader) (io.Reader, error) {
	if _, err := expect(b, classUniversal, tagSequence, true); err != nil {
		return nil, malformed(ErrDecompression, "compressed data: %v", err)
	}
	if _, err := readInt(b); err != nil {
		return nil, malformed(ErrDecompression, "version: %v", err)
	}
	_, algDER, err := b.readElement(1024)
	if err != nil {
		return nil, malformed(ErrDecompression, "compression algorithm: %v", err)
	}
	var alg pkix.AlgorithmIdentifier
	if _, err := asn1.Unmarshal(algDER, &alg); err != nil {
		return nil, malformed(ErrDecompression, "compression algorithm: %v", err)
	}
	if !alg.Algorithm.Equal(oidZlibCompress) {
		return nil, fmt.Errorf("%w: compression algorithm %s", ErrUnsupportedAlgorithm, alg.Algorithm)
	}
	if _, err := expect(b, classUniversal, tagSequence, true); err != nil {
		return nil, malformed(ErrDecompression, "encapsulated content: %v", err)
	}
	if _, err := readOID(b); err != nil {
		return nil, malformed(ErrDecompression, "encapsulated content type: %v", err)
	}
	if _, err := expect(b, classContext, 0, true); err != nil {
		return nil, malformed(ErrDecompression, "compressed content missing: %v", err)
	}
	h, err := b.readHeader()
	if err != nil || !h.is(classUniversal, tagOctetString) {
		return nil, malformed(ErrDecompression, "compressed content: %v", err)
	}
	return newOctetReader(b, h), nil
}
