package cms

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
)

// The writers in this file produce CMS content whose length is not known when its
// first byte goes out: BER with indefinite lengths, the content cut into primitive
// OCTET STRINGs inside a constructed one, as openssl cms -stream writes it. Every
// reader of this package takes BER.

// streamChunk is the size of the OCTET STRINGs a streamed content is cut into: large
// enough that their headers cost nothing, small enough to be held once per writer.
const streamChunk = 128 << 10

// octetHeadRoom is the room before a chunk for its OCTET STRING header (tag, and a
// length of up to four bytes).
const octetHeadRoom = 6

// indefinite opens a constructed value of unknown length.
func indefinite(class, tag int) []byte {
	return []byte{byte(class<<6) | 0x20 | byte(tag), 0x80}
}

// endOfContents closes n values opened with indefinite.
func endOfContents(n int) []byte { return make([]byte, 2*n) }

// chunkWriter writes what it is given as primitive OCTET STRINGs of up to streamChunk
// bytes; transform, when set, changes each chunk in place before it goes out.
type chunkWriter struct {
	w         io.Writer
	transform func([]byte)
	buf       []byte // octetHeadRoom, then the chunk, then extra room
	n         int    // bytes of the chunk held
	err       error
}

// newChunkWriter keeps extra bytes of room after a full chunk, for padding.
func newChunkWriter(w io.Writer, extra int, transform func([]byte)) *chunkWriter {
	return &chunkWriter{w: w, transform: transform, buf: make([]byte, octetHeadRoom+streamChunk+extra)}
}

// Write appends p to the chunk, sending the chunk out each time it is full.
func (c *chunkWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	written := 0
	for len(p) > 0 {
		k := copy(c.buf[octetHeadRoom+c.n:octetHeadRoom+streamChunk], p)
		c.n += k
		written += k
		p = p[k:]
		if c.n == streamChunk {
			if err := c.emit(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// emit sends the chunk held, after transform changed it.
func (c *chunkWriter) emit() error {
	if c.n == 0 {
		return nil
	}
	if c.transform != nil {
		c.transform(c.buf[octetHeadRoom : octetHeadRoom+c.n])
	}
	head := appendHeader(make([]byte, 0, octetHeadRoom), classUniversal, tagOctetString, false, c.n)
	start := octetHeadRoom - len(head)
	copy(c.buf[start:], head)
	_, err := c.w.Write(c.buf[start : octetHeadRoom+c.n])
	c.n = 0
	if err != nil {
		c.err = err
	}
	return err
}

// EncryptWriter encrypts content of a length not known in advance into an EnvelopedData
// ContentInfo with indefinite lengths. Only CBC ciphers stream: GCM's tag covers the
// whole content, so an AuthEnvelopedData is built by Encrypt, in memory.
type EncryptWriter struct {
	out  *chunkWriter
	bs   int
	done bool
}

// NewEncryptWriter writes the envelope's head to w, with a fresh content key wrapped
// for each recipient, and returns the writer that encrypts the content into w. Close
// writes the end.
func NewEncryptWriter(w io.Writer, recipients []*x509.Certificate, opts EncryptOptions) (*EncryptWriter, error) {
	opts, err := checkEncrypt(0, recipients, opts)
	if err != nil {
		return nil, err
	}
	if opts.Cipher.AEAD() {
		return nil, fmt.Errorf("%w: %s cannot be encrypted as a stream", ErrUnsupportedAlgorithm, opts.Cipher)
	}
	cek := make([]byte, opts.Cipher.keyLen())
	if _, err := rand.Read(cek); err != nil {
		return nil, err
	}
	riSet, version, err := recipientInfos(recipients, cek, opts)
	if err != nil {
		return nil, err
	}
	block, err := newBlock(opts.Cipher, cek)
	if err != nil {
		return nil, err
	}
	bs := block.BlockSize()
	iv := make([]byte, bs)
	if _, err := rand.Read(iv); err != nil {
		return nil, err
	}
	alg := derSequence(mustMarshal(opts.Cipher.oid()), derOctets(iv))
	var head []byte
	for _, part := range [][]byte{
		indefinite(classUniversal, tagSequence), mustMarshal(oidEnvelopedData),
		indefinite(classContext, 0),
		indefinite(classUniversal, tagSequence), mustMarshal(version), riSet,
		indefinite(classUniversal, tagSequence), mustMarshal(oidData), alg,
		indefinite(classContext, 0), // encryptedContent, [0] IMPLICIT OCTET STRING
	} {
		head = append(head, part...)
	}
	if _, err := w.Write(head); err != nil {
		return nil, err
	}
	// A chunk is a whole number of blocks, with room for a block of padding after the
	// last one.
	mode := cipher.NewCBCEncrypter(block, iv)
	crypt := func(b []byte) { mode.CryptBlocks(b, b) }
	return &EncryptWriter{out: newChunkWriter(w, bs, crypt), bs: bs}, nil
}

// Write encrypts p; each full chunk goes out encrypted.
func (e *EncryptWriter) Write(p []byte) (int, error) {
	if e.done {
		return 0, errors.New("encrypt: write after close")
	}
	return e.out.Write(p)
}

// Close pads and encrypts the last chunk and ends the envelope.
func (e *EncryptWriter) Close() error {
	if e.done {
		return nil
	}
	e.done = true
	c := e.out
	if c.err != nil {
		return c.err
	}
	pad := e.bs - c.n%e.bs
	for i := range pad {
		c.buf[octetHeadRoom+c.n+i] = byte(pad)
	}
	c.n += pad
	if err := c.emit(); err != nil {
		return err
	}
	// encryptedContent, EncryptedContentInfo, EnvelopedData, [0], ContentInfo.
	_, err := c.w.Write(endOfContents(5))
	return err
}

// CompressWriter compresses content of a length not known in advance into a
// CompressedData ContentInfo with indefinite lengths (RFC 3274, zlib). The zlib level
// follows the content, segment by segment (see streamLevel).
type CompressWriter struct {
	out *chunkWriter
	z   *sampledZlib
}

// NewCompressWriter writes the CompressedData's head to w and returns the writer that
// compresses the content into it. Close writes the end.
func NewCompressWriter(w io.Writer) (*CompressWriter, error) {
	var head []byte
	for _, part := range [][]byte{
		indefinite(classUniversal, tagSequence), mustMarshal(oidCompressedData),
		indefinite(classContext, 0),
		indefinite(classUniversal, tagSequence), mustMarshal(0), derSequence(mustMarshal(oidZlibCompress)),
		indefinite(classUniversal, tagSequence), mustMarshal(oidData),
		indefinite(classContext, 0),
		indefinite(classUniversal, tagOctetString),
	} {
		head = append(head, part...)
	}
	if _, err := w.Write(head); err != nil {
		return nil, err
	}
	out := newChunkWriter(w, 0, nil)
	return &CompressWriter{out: out, z: newSampledZlib(out)}, nil
}

// Write compresses p.
func (c *CompressWriter) Write(p []byte) (int, error) { return c.z.Write(p) }

// Level is the zlib level chosen for the first segment, -1 before its first block was
// seen; later segments may differ (see streamLevel).
func (c *CompressWriter) Level() int { return c.z.first }

// Close ends the zlib stream and the CompressedData.
func (c *CompressWriter) Close() error {
	if err := c.z.Close(); err != nil {
		return err
	}
	if err := c.out.emit(); err != nil {
		return err
	}
	// OCTET STRING, [0], EncapsulatedContentInfo, CompressedData, [0], ContentInfo.
	_, err := c.out.w.Write(endOfContents(6))
	return err
}
