package mime

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strings"

	"wharf/internal/protocol/as2/cms"
)

// Signer is our signing identity for a message or an MDN.
type Signer struct {
	Certificate *x509.Certificate
	Key         crypto.Signer
	// Chain is added to the signature after the certificate.
	Chain []*x509.Certificate
	// Digest defaults to SHA-256.
	Digest cms.DigestAlgorithm
	// PSS signs with RSASSA-PSS instead of PKCS #1 v1.5.
	PSS bool
	// AlgorithmProtection adds the RFC 6211 attribute to the signature (the
	// partner profile's algorithm_protection).
	AlgorithmProtection bool
}

// Encryption names the partner's certificates and the algorithms.
type Encryption struct {
	Recipients []*x509.Certificate
	cms.EncryptOptions
}

// BuildOptions chooses the protection of an outbound message.
type BuildOptions struct {
	// ContentType of the payload; default application/octet-stream.
	ContentType string
	Compress    bool
	Sign        *Signer
	Encrypt     *Encryption
	// MICAlgorithm is the algorithm we request as signed-receipt-micalg;
	// default the signing digest, else SHA-256.
	MICAlgorithm cms.DigestAlgorithm
	// MICAlgorithms are further algorithms MICWith answers for. The content
	// the MICs cover is not kept, so every MIC wanted later is computed while
	// the message is built.
	MICAlgorithms []cms.DigestAlgorithm

	// CompressAfterSigning, with Compress and Sign, compresses the signed message
	// instead of signing the compressed one (RFC 5402 §3); the MIC then covers the
	// document's entity, as for a message signed only.
	CompressAfterSigning bool

	newBoundary func() string // tests make boundaries predictable
}

// Built is an outbound AS2 message.
type Built struct {
	// ContentType is the HTTP Content-Type.
	ContentType string
	// Header holds the other MIME fields that travel as HTTP headers.
	Header http.Header
	// Body is the HTTP body. BuildFrom leaves it nil for a message encrypted
	// with a CBC cipher: WriteBody encrypts as it writes, so the envelope is
	// never held whole.
	Body []byte
	MICs
	// MICContent is what the MICs cover. Only Build keeps it; BuildFrom drops
	// it once the MICs are computed.
	MICContent []byte

	plain   []byte // what WriteBody encrypts when Body is nil
	encrypt *Encryption
	size    int64
}

// MICs are the MICs of a built message.
type MICs struct {
	// MIC is what the partner should return for MICAlgorithm.
	MIC MIC
	// ExpectedMICs are the values a correct partner may return: the MIC for
	// the requested algorithm and, when it differs, the one for the signing
	// digest (products disagree on which to use).
	ExpectedMICs []MIC

	mics []MIC // every MIC computed
}

// MICWith returns the MIC with another algorithm, if the message was built
// with it (MICAlgorithm, the signing digest or one of MICAlgorithms).
func (m *MICs) MICWith(alg cms.DigestAlgorithm) (MIC, bool) {
	for _, mic := range m.mics {
		if mic.Algorithm == alg {
			return mic, true
		}
	}
	return MIC{}, false
}

// BodySize is the length of the HTTP body.
func (b *Built) BodySize() int64 {
	if b.Body != nil {
		return int64(len(b.Body))
	}
	return b.size
}

// WriteBody writes the HTTP body, BodySize bytes, to w. A body left to be
// encrypted is encrypted anew on every call, with a fresh content key, so it
// can be written again for a retried request.
func (b *Built) WriteBody(w io.Writer) error {
	if b.Body != nil || b.encrypt == nil {
		_, err := w.Write(b.Body)
		return err
	}
	if err := cms.EncryptTo(w, bytes.NewReader(b.plain), int64(len(b.plain)), b.encrypt.Recipients, b.encrypt.EncryptOptions); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	return nil
}

// MatchMIC reports whether a MIC returned in an MDN equals one of the
// expected values.
func MatchMIC(got MIC, expected []MIC) bool {
	for _, e := range expected {
		if got.Equal(e) {
			return true
		}
	}
	return false
}

// Build protects payload for sending: compress, then sign, then encrypt, as
// the options ask. fileName goes into the payload's Content-Disposition
// (omitted when empty). Body holds the whole HTTP body.
func Build(payload []byte, fileName string, opts BuildOptions) (*Built, error) {
	out, err := build(bytes.NewReader(payload), int64(len(payload)), fileName, opts, true)
	if err != nil {
		return nil, err
	}
	if out.Body == nil {
		var body bytes.Buffer
		body.Grow(int(out.size))
		if err := out.WriteBody(&body); err != nil {
			return nil, err
		}
		out.Body, out.plain, out.encrypt = body.Bytes(), nil, nil
	}
	return out, nil
}

// BuildFrom is Build for a payload read from r, holding the message about
// once: the payload's entity (or its compressed form, which is compressed
// as it is read) and the multipart/signed around it are written into one
// buffer, the MICs are computed on the way, and a CBC envelope is left to
// WriteBody. Only a GCM envelope is made whole, next to its content. size is
// the payload's length as far as the caller knows it; it sizes the buffer,
// and a payload of another length still builds.
func BuildFrom(r io.Reader, size int64, fileName string, opts BuildOptions) (*Built, error) {
	return build(r, size, fileName, opts, false)
}

// Room a buffer keeps before the content, for the headers of the layers
// around it, and after it, for a signature part; a layer that needs more
// moves the content.
const (
	headRoom = 1 << 10
	sigRoom  = 16 << 10
	slack    = 512 // lets the read that finds the end of the payload land in the buffer
)

// build does the work of Build and BuildFrom; keep holds on to the MIC
// content, which Build's callers read.
func build(r io.Reader, size int64, fileName string, opts BuildOptions, keep bool) (*Built, error) {
	l, err := newLayout(fileName, opts)
	if err != nil {
		return nil, err
	}
	opts, micAlg, signDigest, payloadFields := l.opts, l.micAlg, l.signDigest, l.payloadFields
	ct, disposition := payloadFields[0][1], payloadFields[2][1]
	mics, err := l.newHasher()
	if err != nil {
		return nil, err
	}
	size = max(size, 0)
	out := &Built{Header: http.Header{}}

	if !opts.Compress && opts.Sign == nil && opts.Encrypt == nil {
		// Nothing to wrap: the payload's own fields become HTTP headers and
		// the MIC covers the content alone.
		buf := newLayerBuf(0, size, slack)
		if err := buf.readFrom(r, mics); err != nil {
			return nil, err
		}
		out.ContentType = ct
		out.Header.Set("Content-Transfer-Encoding", "binary")
		out.Header.Set("Content-Disposition", disposition)
		out.Body = buf.bytes()
		if keep {
			out.MICContent = out.Body
		}
		out.setMICs(mics, micAlg, signDigest)
		return out, nil
	}

	// buf holds the current layer's body; fields are its header, written in
	// front of it when another layer wraps it (see addHeader).
	var (
		buf    *layerBuf
		fields = payloadFields
	)
	tail := slack
	if opts.Sign != nil {
		tail = sigRoom
	}
	compressLast := opts.Compress && opts.Sign != nil && opts.CompressAfterSigning
	if opts.Compress && !compressLast {
		// The MIC covers the uncompressed entity unless a signature covers
		// the compressed one; the entity is hashed on its way to zlib and
		// never held. Without encryption either, it covers the content
		// alone (RFC 4130 7.3.1), as the receiver of a compressed-only
		// message computes it.
		var micOut io.Writer
		var kept *bytes.Buffer
		if opts.Sign == nil {
			micOut = mics
			if keep {
				kept = &bytes.Buffer{}
				micOut = io.MultiWriter(mics, kept)
			}
		}
		micHeader := opts.Encrypt != nil
		if buf, err = compressEntity(r, size, entityHeader(payloadFields), micOut, micHeader, tail); err != nil {
			return nil, err
		}
		if kept != nil {
			out.MICContent = kept.Bytes()
		}
		fields = pkcs7MimeFields("compressed-data", "smime.p7z")
	} else {
		header := []byte(entityHeader(payloadFields))
		buf = newLayerBuf(headRoom, size+int64(len(header)), tail)
		buf.write(header)
		_, _ = mics.Write(header)
		if err := buf.readFrom(r, mics); err != nil {
			return nil, err
		}
		fields = nil // written already
		if keep {
			out.MICContent = buf.bytes()
		}
	}

	if opts.Sign != nil {
		addHeader(buf, fields)
		signed := buf.bytes()
		if opts.Compress && !compressLast {
			// The signature and the MIC cover the compressed entity.
			_, _ = mics.Write(signed)
			if keep {
				out.MICContent = signed
			}
		}
		if fields, err = signLayer(buf, mics.sum(signDigest), opts.Sign, opts.newBoundary); err != nil {
			return nil, err
		}
	}
	out.setMICs(mics, micAlg, signDigest)
	if compressLast {
		if buf, err = compressLayer(buf, fields); err != nil {
			return nil, err
		}
		fields = pkcs7MimeFields("compressed-data", "smime.p7z")
	}

	if opts.Encrypt == nil {
		// The outermost layer's fields travel as HTTP headers.
		out.setFields(fields)
		out.Body = buf.bytes()
		return out, nil
	}
	addHeader(buf, fields)
	plain := buf.bytes()
	smimeType := "enveloped-data"
	if opts.Encrypt.Cipher.AEAD() {
		smimeType = "authEnveloped-data"
	}
	out.setFields(pkcs7MimeFields(smimeType, "smime.p7m"))
	if opts.Encrypt.Cipher.AEAD() {
		// GCM's tag follows the ciphertext and covers all of it, so the
		// envelope is made whole here.
		der, err := cms.Encrypt(plain, opts.Encrypt.Recipients, opts.Encrypt.EncryptOptions)
		if err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
		out.Body = der
		return out, nil
	}
	n, err := cms.EncryptedSize(int64(len(plain)), opts.Encrypt.Recipients, opts.Encrypt.EncryptOptions)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	out.plain, out.encrypt, out.size = plain, opts.Encrypt, n
	return out, nil
}

// addHeader makes the layer in buf an entity by writing its header fields in
// front; nil fields mean the header is there already.
func addHeader(buf *layerBuf, fields [][2]string) {
	if fields != nil {
		buf.prepend([]byte(entityHeader(fields)))
	}
}

// setFields sets the HTTP Content-Type and headers from the outermost
// entity's fields.
func (b *Built) setFields(fields [][2]string) {
	b.ContentType = httpFields(fields, b.Header)
}

// httpFields sets h from the outermost entity's fields, but for the
// Content-Type, which it returns.
func httpFields(fields [][2]string, h http.Header) (contentType string) {
	for _, f := range fields {
		if f[0] == "Content-Type" {
			contentType = cleanField(f[1])
		} else {
			h.Set(f[0], cleanField(f[1]))
		}
	}
	return contentType
}

// setMICs records the MICs once their content is hashed.
func (b *Built) setMICs(h *micHasher, micAlg, signDigest cms.DigestAlgorithm) {
	b.MICs = newMICs(h, micAlg, signDigest)
}

// newMICs are the MICs once their content is hashed.
func newMICs(h *micHasher, micAlg, signDigest cms.DigestAlgorithm) MICs {
	m := MICs{mics: h.mics()}
	m.MIC, _ = m.MICWith(micAlg)
	m.ExpectedMICs = []MIC{m.MIC}
	if signDigest != "" && signDigest != micAlg {
		mic, _ := m.MICWith(signDigest)
		m.ExpectedMICs = append(m.ExpectedMICs, mic)
	}
	return m
}

// compressLayer compresses the entity in buf (fields make its header) into a new buffer
// holding the CompressedData.
func compressLayer(buf *layerBuf, fields [][2]string) (*layerBuf, error) {
	addHeader(buf, fields)
	entity := buf.bytes()
	return compressEntity(bytes.NewReader(entity), int64(len(entity)), "", nil, false, slack)
}

// compressEntity streams the entity (header, then the payload read from r)
// through zlib into a buffer, and through micOut unless it is nil (the
// header too when micHeader), and returns the CompressedData in the buffer.
func compressEntity(r io.Reader, size int64, header string, micOut io.Writer, micHeader bool, tail int) (*layerBuf, error) {
	n := size + int64(len(header))
	// Room for incompressible content, which zlib stores in blocks with a
	// few bytes each.
	buf := newLayerBuf(headRoom, n+n>>10+64, tail)
	c := cms.NewCompressor(buf)
	w := io.Writer(c)
	if micOut != nil {
		w = io.MultiWriter(micOut, c)
	}
	hw := io.Writer(c)
	if micHeader {
		hw = w
	}
	if _, err := io.WriteString(hw, header); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if _, err := io.Copy(w, r); err != nil {
		return nil, fmt.Errorf("build: reading the payload: %w", err)
	}
	head, err := c.Close()
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	buf.prepend(head)
	return buf, nil
}

// micHasher digests the MIC content with every algorithm wanted, in one
// pass.
type micHasher struct {
	algs   []cms.DigestAlgorithm
	hashes []hash.Hash
}

func newMICHasher(algs []cms.DigestAlgorithm) (*micHasher, error) {
	m := &micHasher{}
	for _, a := range algs {
		if a == "" || slices.Contains(m.algs, a) {
			continue
		}
		if a.Hash() == 0 {
			return nil, fmt.Errorf("build: %w: MIC algorithm %q", cms.ErrUnsupportedAlgorithm, a)
		}
		m.algs = append(m.algs, a)
		m.hashes = append(m.hashes, a.Hash().New())
	}
	return m, nil
}

func (m *micHasher) Write(p []byte) (int, error) {
	for _, h := range m.hashes {
		h.Write(p)
	}
	return len(p), nil
}

func (m *micHasher) sum(alg cms.DigestAlgorithm) []byte {
	return m.hashes[slices.Index(m.algs, alg)].Sum(nil)
}

func (m *micHasher) mics() []MIC {
	out := make([]MIC, len(m.algs))
	for i, a := range m.algs {
		out[i] = MIC{Digest: m.hashes[i].Sum(nil), Algorithm: a}
	}
	return out
}

// layerBuf holds the body of the innermost layer built so far, b[start:end],
// with room before it for the headers of the layers around it and after it
// for a signature part, so wrapping a layer does not copy its content.
type layerBuf struct {
	b          []byte
	start, end int
}

func newLayerBuf(head int, content int64, tail int) *layerBuf {
	return &layerBuf{b: make([]byte, head+int(content)+tail), start: head, end: head}
}

func (l *layerBuf) bytes() []byte { return l.b[l.start:l.end:l.end] }

// Write appends p, moving the content to a larger buffer when the room
// after it runs out.
func (l *layerBuf) Write(p []byte) (int, error) {
	if len(l.b)-l.end < len(p) {
		l.move(l.start, 2*(l.end+len(p)))
	}
	l.end += copy(l.b[l.end:], p)
	return len(p), nil
}

func (l *layerBuf) write(p []byte) { _, _ = l.Write(p) }

// prepend writes p in front of the content; the content then starts with it.
func (l *layerBuf) prepend(p []byte) {
	if l.start < len(p) {
		l.move(headRoom+len(p), len(l.b)+headRoom+len(p))
	}
	l.start -= len(p)
	copy(l.b[l.start:], p)
}

// move copies the content to a new buffer of n bytes, starting at start.
func (l *layerBuf) move(start, n int) {
	b := make([]byte, n)
	copy(b[start:], l.b[l.start:l.end])
	l.b, l.end, l.start = b, start+l.end-l.start, start
}

// readFrom appends all of r, writing what it reads to h as well.
func (l *layerBuf) readFrom(r io.Reader, h io.Writer) error {
	for {
		if l.end == len(l.b) {
			l.move(l.start, 2*len(l.b)+slack)
		}
		n, err := r.Read(l.b[l.end:])
		if n > 0 {
			_, _ = h.Write(l.b[l.end : l.end+n])
			l.end += n
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("build: reading the payload: %w", err)
		}
	}
}

func digestOrDefault(d cms.DigestAlgorithm) cms.DigestAlgorithm {
	if d == "" {
		return cms.SHA256
	}
	return d
}

func pkcs7MimeFields(smimeType, name string) [][2]string {
	return [][2]string{
		{"Content-Type", `application/pkcs7-mime; smime-type=` + smimeType + `; name="` + name + `"`},
		{"Content-Transfer-Encoding", "binary"},
		{"Content-Disposition", `attachment; filename="` + name + `"`},
	}
}

// buildEntity writes header fields (values cleaned of line breaks) and body.
func buildEntity(fields [][2]string, body []byte) []byte {
	h := entityHeader(fields)
	b := make([]byte, 0, len(h)+len(body))
	return append(append(b, h...), body...)
}

// entityHeader writes header fields (values cleaned of line breaks) and the
// blank line that ends them.
func entityHeader(fields [][2]string) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f[0])
		b.WriteString(": ")
		b.WriteString(cleanField(f[1]))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// cleanField replaces control characters so a value cannot start a new
// header line.
func cleanField(v string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return ' '
		}
		return r
	}, v)
}

// signEntity wraps entity in a multipart/signed with a base64 signature
// part and returns the whole multipart/signed entity, header included.
func signEntity(entity []byte, s *Signer, newBoundary func() string) ([]byte, error) {
	if s.Certificate == nil || s.Key == nil {
		return nil, errors.New("build: signing needs a certificate and a key")
	}
	h := digestOrDefault(s.Digest).Hash()
	if h == 0 {
		return nil, fmt.Errorf("build: %w: digest %q", cms.ErrUnsupportedAlgorithm, s.Digest)
	}
	md := h.New()
	md.Write(entity)
	buf := newLayerBuf(headRoom, int64(len(entity)), sigRoom)
	buf.write(entity)
	fields, err := signLayer(buf, md.Sum(nil), s, newBoundary)
	if err != nil {
		return nil, err
	}
	buf.prepend([]byte(entityHeader(fields)))
	return buf.bytes(), nil
}

// signLayer wraps the entity in buf in a multipart/signed with a base64
// signature part: the delimiters and the signature are written around it in
// the same buffer. md is the entity's digest with the signing digest. It
// returns the multipart/signed's header fields.
func signLayer(buf *layerBuf, md []byte, s *Signer, newBoundary func() string) ([][2]string, error) {
	digest := digestOrDefault(s.Digest)
	opts := cms.SignOptions{AlgorithmProtection: s.AlgorithmProtection}
	var sig []byte
	var err error
	if s.PSS {
		sig, err = cms.SignDigestWith(md, s.Certificate, s.Key, s.Chain, digest, true, opts)
	} else {
		// PKCS #1 v1.5 signatures go through pkcs7, which takes the content itself.
		sig, err = cms.SignDetachedWith(buf.bytes(), s.Certificate, s.Key, s.Chain, digest, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	boundary := newBoundary()
	for bytes.Contains(buf.bytes(), []byte(boundary)) {
		boundary = randomBoundary()
	}
	buf.prepend([]byte("--" + boundary + "\r\n"))
	buf.write(signatureTrailer(boundary, sig))
	return signedFields(digest, boundary), nil
}

// signatureTrailer is what follows the signed entity in a multipart/signed:
// the signature part and the closing delimiter.
func signatureTrailer(boundary string, sig []byte) []byte {
	var b bytes.Buffer
	b.WriteString("\r\n--" + boundary + "\r\n")
	b.WriteString(entityHeader([][2]string{
		{"Content-Type", `application/pkcs7-signature; name="smime.p7s"; smime-type=signed-data`},
		{"Content-Transfer-Encoding", "base64"},
		{"Content-Disposition", `attachment; filename="smime.p7s"`},
	}))
	b.Write(base64Lines(sig))
	b.WriteString("--" + boundary + "--\r\n")
	return b.Bytes()
}

// signedFields are the header fields of a multipart/signed.
func signedFields(digest cms.DigestAlgorithm, boundary string) [][2]string {
	ct := fmt.Sprintf(`multipart/signed; protocol="application/pkcs7-signature"; micalg=%s; boundary="%s"`,
		digest.MICName(), boundary)
	return [][2]string{{"Content-Type", ct}}
}

// base64Lines encodes b in lines of 76 characters, each ended by CRLF.
func base64Lines(b []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(b)
	var out bytes.Buffer
	for len(enc) > 76 {
		out.WriteString(enc[:76])
		out.WriteString("\r\n")
		enc = enc[76:]
	}
	out.WriteString(enc)
	out.WriteString("\r\n")
	return out.Bytes()
}

func randomBoundary() string {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "----=_wharf_" + hex.EncodeToString(b[:])
}
