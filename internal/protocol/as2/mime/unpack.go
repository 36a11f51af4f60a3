package mime

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"strings"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
)

// Layer is one protection layer of an AS2 message.
type Layer string

// The layers Unpack peels.
const (
	LayerEncrypted  Layer = "encrypted"
	LayerSigned     Layer = "signed"
	LayerCompressed Layer = "compressed"
)

// DefaultMaxDecompressedSize bounds decompression when the caller sets no
// limit.
const DefaultMaxDecompressedSize = 128 << 20

// DefaultMaxDecompressionRatio bounds how many times its compressed size a
// layer may inflate to when the caller sets no ratio.
const DefaultMaxDecompressionRatio = 100

// decompressionFloor is what any compressed layer may inflate to whatever its
// ratio: a small document compresses far better than a large one.
const decompressionFloor = 1 << 20

const maxLayers = 8

// UnpackOptions carries what Unpack needs to open a message.
type UnpackOptions struct {
	// Decryption lists our certificates with their keys; more than one
	// during a certificate rollover.
	Decryption []cms.Recipient
	// PartnerCertificates are the only certificates a signature is verified
	// against (see cms.VerifyDetached).
	PartnerCertificates []*x509.Certificate
	// AllowSHA1 accepts SHA-1 signatures (a profile choice).
	AllowSHA1 bool
	// VerifyTime judges certificate validity; zero means now.
	VerifyTime time.Time
	// MaxDecompressedSize bounds every decompressed layer; zero means
	// DefaultMaxDecompressedSize.
	MaxDecompressedSize int64
	// MaxDecompressionRatio bounds every decompressed layer past a floor of a
	// mebibyte to this many times the size of its compressed form, so a
	// small body cannot make the receiver inflate gigabytes; zero means
	// DefaultMaxDecompressionRatio.
	MaxDecompressionRatio int
	// RequireSigned and RequireEncrypted are the protections the message
	// must carry. One without them fails with cms.ErrInsufficientSecurity,
	// and a compressed layer whose content turns out to be the document
	// itself while a demand is unmet fails as soon as that content's header
	// section is inflated, before the document is.
	RequireSigned, RequireEncrypted bool
	// MICPreference chooses between the requested MIC algorithm and the
	// signature's digest when they differ.
	MICPreference MICPreference
	// TempDir is where a decompressed layer larger than a megabyte is
	// collected before it is read back at its exact size; empty means
	// os.TempDir().
	TempDir string
	// MaxAEADSize bounds AES-GCM content UnpackStream holds to check its tag;
	// zero means DefaultMaxAEADSize.
	MaxAEADSize int64
	// CanonicalLineEnds makes UnpackStream read the signed part of a
	// multipart/signed with its bare LF line endings made CRLF (see
	// Result.RetryCanonical).
	CanonicalLineEnds bool
}

func (o UnpackOptions) maxAEAD() int64 {
	if o.MaxAEADSize <= 0 {
		return DefaultMaxAEADSize
	}
	return o.MaxAEADSize
}

// Result is an unpacked AS2 message.
type Result struct {
	// Payload is the document, transfer encoding removed.
	Payload []byte
	// ContentType is the payload's Content-Type as sent.
	ContentType string
	// FileName is the Content-Disposition filename reduced to a bare name
	// and validated; empty when none was sent or nothing valid remained.
	FileName persistence.FileName
	// RawFileName is the filename parameter as sent.
	RawFileName string
	// Layers lists the protection layers, outermost first.
	Layers                        []Layer
	Signed, Encrypted, Compressed bool
	// Signer describes the verified signature; nil when unsigned.
	Signer *cms.SignerInfo
	// Decryption describes the envelope; nil when not encrypted.
	Decryption *cms.DecryptInfo
	// SignedContent is the first part of the multipart/signed, byte for
	// byte as received: what the signature and the MIC cover.
	SignedContent []byte
	// MICContent is what the MIC covers: SignedContent when signed, else
	// the decrypted (and decompressed) entity with its headers when
	// encrypted, else the payload alone.
	MICContent []byte
	// MIC is computed over MICContent with the algorithm chosen from the
	// request's signed-receipt-micalg and the signature.
	MIC MIC
	// DispositionOptions is the parsed request header.
	DispositionOptions DispositionOptions

	// PayloadSize is the length of the document UnpackStream wrote.
	PayloadSize int64
	// RetryCanonical says UnpackStream found the signature failing on its
	// content digest over a signed part with bare LF line endings: the
	// message should be opened again with UnpackOptions.CanonicalLineEnds.
	RetryCanonical bool
	// mics are the MIC digests UnpackStream computed, by algorithm.
	mics map[cms.DigestAlgorithm][]byte
}

// Tolerances are the notes of the envelope and the signature on how a part
// outside the standard was read (cms.DecryptInfo.Tolerances,
// cms.SignerInfo.Tolerances), the envelope's first.
func (r *Result) Tolerances() []string {
	var notes []string
	if r.Decryption != nil {
		notes = append(notes, r.Decryption.Tolerances...)
	}
	if r.Signer != nil {
		notes = append(notes, r.Signer.Tolerances...)
	}
	return notes
}

// MICWith computes the MIC over the same content with another algorithm.
// A result of UnpackStream knows only the algorithms it computed on the way; the MIC of
// another has no digest.
func (r *Result) MICWith(alg cms.DigestAlgorithm) MIC {
	if r.mics != nil {
		return MIC{Digest: r.mics[alg], Algorithm: alg}
	}
	return ComputeMIC(r.MICContent, alg)
}

// Unpack opens an AS2 message: contentType and body are the HTTP request's,
// header the rest of its header fields (Content-Transfer-Encoding and
// Content-Disposition matter when the body is the payload itself;
// Disposition-Notification-Options picks the MIC algorithm). Encryption,
// signature and compression are peeled in whatever order the sender layered
// them. On error the partial result (layers seen so far, the signer's digest
// once known) is returned with it, so a receiver can still compose its MDN.
//
// The layers are sub-slices of body or of the layer that held them where the
// transfer encoding allows it; a decrypted layer takes one buffer of its size,
// a decompressed one too (a large one is collected in a temporary file first,
// see UnpackOptions.TempDir; a failure to use that file is ErrIO).
func Unpack(contentType string, header http.Header, body []byte, opts UnpackOptions) (*Result, error) {
	res, top := newResult(contentType, header)
	return res, peel(res, &Entity{Header: top, Body: body, Raw: body}, nil, 0, opts)
}

// ErrIO reports that the body could not be read or a layer could not be kept
// in the temporary directory: a failure of the receiving side, not of the
// message.
var ErrIO = errors.New("mime: I/O error")

func newResult(contentType string, header http.Header) (*Result, textproto.MIMEHeader) {
	res := &Result{DispositionOptions: ParseDispositionOptions(header.Get("Disposition-Notification-Options"))}
	top := textproto.MIMEHeader{"Content-Type": {contentType}}
	for _, k := range []string{"Content-Transfer-Encoding", "Content-Disposition"} {
		if v := header.Get(k); v != "" {
			top.Set(k, v)
		}
	}
	return res, top
}

// peel opens entity and the layers within it, depth layers having been opened
// already; unwrapped is the last decrypted or decompressed entity.
func peel(res *Result, entity *Entity, unwrapped []byte, depth int, opts UnpackOptions) error {
	for ; ; depth++ {
		if depth > maxLayers {
			return fmt.Errorf("%w: more than %d layers", ErrMalformed, maxLayers)
		}
		mt, params, err := entity.MediaType()
		if err != nil {
			return err
		}
		var inner []byte
		switch {
		case mt == "multipart/signed":
			signed, sig, err := signedParts(entity, params)
			if err != nil {
				return err
			}
			res.Layers = append(res.Layers, LayerSigned)
			res.Signed = true
			info, signedBytes, err := verify(sig, signed, opts)
			if info != nil && res.Signer == nil {
				res.Signer = info
			}
			if err != nil {
				return err
			}
			if res.SignedContent == nil {
				res.SignedContent = signedBytes
			}
			inner = signedBytes
		case mt == "application/pkcs7-mime" || mt == "application/x-pkcs7-mime":
			data, err := entity.Content()
			if err != nil {
				return err
			}
			kind, err := smimeKind(params["smime-type"], data)
			if err != nil {
				return err
			}
			switch kind {
			case cms.KindEnvelopedData, cms.KindAuthEnvelopedData:
				res.Layers = append(res.Layers, LayerEncrypted)
				res.Encrypted = true
				plain, info, err := cms.Decrypt(data, opts.Decryption)
				if res.Decryption == nil {
					res.Decryption = info
				}
				if err != nil {
					return err
				}
				inner = plain
			case cms.KindCompressedData:
				res.Layers = append(res.Layers, LayerCompressed)
				res.Compressed = true
				plain, err := decompress(bytes.NewReader(data), int64(len(data)), res, opts)
				if err != nil {
					return err
				}
				inner = plain
			default:
				return fmt.Errorf("%w: application/pkcs7-mime with %s", ErrUnsupportedLayer, kind)
			}
			unwrapped = inner
		default:
			return finish(res, entity, unwrapped, opts)
		}
		if entity, err = ParseEntity(inner); err != nil {
			return err
		}
	}
}

// trackingReader keeps the first error of r other than EOF, so a failure to
// read the body is told from a message that does not decode.
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return n, err
}

// spoolAbove is the size past which a decompressed layer goes to a temporary
// file. Below it a growing buffer costs little; above it, the old and the new
// backing arrays of a growing buffer would together take up to three times
// the layer's size.
const spoolAbove = 1 << 20

// decompress inflates a CompressedData of size bytes from r into a buffer of
// the exact size of its content: a small layer is collected in memory, a
// large one in a temporary file that is then read back. The content may
// inflate to the smaller of the absolute limit and the ratio's; while a
// protection res lacks is demanded, a content that is not a further layer is
// refused once its header section is seen (see layerGuard).
func decompress(r io.Reader, size int64, res *Result, opts UnpackOptions) ([]byte, error) {
	s := &spool{dir: opts.TempDir}
	defer s.discard()
	var w io.Writer = s
	if err := opts.unmet(res); err != nil {
		w = &layerGuard{w: s, refuse: err}
	}
	limit := opts.inflateLimit(size)
	if err := cms.DecompressTo(w, r, limit); err != nil {
		var le *cms.DecompressionLimitError
		switch {
		case s.err != nil:
			return nil, fmt.Errorf("%w: decompressed layer: %w", ErrIO, s.err)
		case errors.As(err, &le):
			return nil, fmt.Errorf("compressed layer of %d bytes inflates past %d bytes (at most %d times its size beyond the first MiB, and no more than the size limit): %w",
				size, limit, opts.ratio(), err)
		}
		return nil, err
	}
	out, err := s.contents()
	if err != nil {
		return nil, fmt.Errorf("%w: decompressed layer: %w", ErrIO, err)
	}
	return out, nil
}

// LayerSpoolPattern names the temporary file of a layer too large for memory, so a
// start can find what a crash left behind.
const LayerSpoolPattern = "as2-layer-*"

// spool collects a layer of unknown size: in memory up to spoolAbove bytes,
// then in a temporary file.
type spool struct {
	dir  string
	mem  bytes.Buffer
	file *os.File
	size int64
	err  error // the first failure to write the file
}

func (s *spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.file == nil && s.size+int64(len(p)) <= spoolAbove {
		s.size += int64(len(p))
		return s.mem.Write(p)
	}
	if s.file == nil {
		f, err := os.CreateTemp(s.dir, LayerSpoolPattern)
		if err != nil {
			s.err = err
			return 0, err
		}
		s.file = f
		if _, err := f.Write(s.mem.Bytes()); err != nil {
			s.err = err
			return 0, err
		}
		s.mem = bytes.Buffer{}
	}
	n, err := s.file.Write(p)
	s.size += int64(n)
	if err != nil {
		s.err = err
	}
	return n, err
}

// contents returns what was written, in a buffer of its size.
func (s *spool) contents() ([]byte, error) {
	if s.file == nil {
		return s.mem.Bytes(), nil
	}
	out := make([]byte, s.size)
	if _, err := s.file.ReadAt(out, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// discard closes and removes the file, if any.
func (s *spool) discard() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
	}
}

func finish(res *Result, payload *Entity, unwrapped []byte, opts UnpackOptions) error {
	if err := opts.unmet(res); err != nil {
		return err
	}
	content, err := payload.Content()
	if err != nil {
		return err
	}
	res.Payload = content
	res.ContentType = payload.Header.Get("Content-Type")
	res.RawFileName = payload.FileName()
	res.FileName = sanitizeFileName(res.RawFileName)
	// RFC 4130 7.3.1: a signed message's MIC covers the signed entity, an unsigned but
	// encrypted one's the decrypted (and decompressed) entity with its headers, and an
	// unsigned, unencrypted one's the content alone, even when it came compressed.
	switch {
	case res.SignedContent != nil:
		res.MICContent = res.SignedContent
	case unwrapped != nil && res.Encrypted:
		res.MICContent = unwrapped
	default:
		res.MICContent = content
	}
	var signer cms.DigestAlgorithm
	if res.Signer != nil {
		signer = res.Signer.Digest
	}
	alg, name := chooseMIC(opts.MICPreference, res.DispositionOptions, signer)
	res.MIC = ComputeMIC(res.MICContent, alg)
	res.MIC.Name = name
	return nil
}

// sanitizeFileName keeps the last path element of a sent name, made visible
// (persistence.Unhidden), and returns it when it is a valid bare file name.
func sanitizeFileName(raw string) persistence.FileName {
	if raw == "" {
		return ""
	}
	name := raw
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = path.Clean(strings.TrimSpace(name))
	if _, err := persistence.ParseFileName(name); err != nil {
		return ""
	}
	return persistence.FileName(persistence.Unhidden(name))
}

// smimeKind takes the layer type from smime-type, or from the CMS content
// type when the parameter is missing or unknown.
func smimeKind(param string, data []byte) (cms.Kind, error) {
	switch strings.ToLower(strings.TrimSpace(param)) {
	case "enveloped-data":
		return cms.KindEnvelopedData, nil
	case "authenveloped-data":
		return cms.KindAuthEnvelopedData, nil
	case "compressed-data":
		return cms.KindCompressedData, nil
	}
	kind, err := cms.Identify(data)
	if err != nil {
		return "", fmt.Errorf("%w: application/pkcs7-mime content: %w", ErrUnsupportedLayer, err)
	}
	return kind, nil
}

// signedParts returns the first part of a multipart/signed byte for byte
// and the decoded signature of the second.
func signedParts(e *Entity, params map[string]string) ([]byte, []byte, error) {
	parts, err := splitMultipart(e.Body, params["boundary"])
	if err != nil {
		return nil, nil, err
	}
	if len(parts) != 2 {
		return nil, nil, fmt.Errorf("%w: multipart/signed with %d parts", ErrMalformed, len(parts))
	}
	sigEntity, err := ParseEntity(parts[1])
	if err != nil {
		return nil, nil, err
	}
	mt, _, err := sigEntity.MediaType()
	if err != nil {
		return nil, nil, err
	}
	if mt != "application/pkcs7-signature" && mt != "application/x-pkcs7-signature" {
		return nil, nil, fmt.Errorf("%w: signature part is %s", ErrUnsupportedLayer, mt)
	}
	sig, err := sigEntity.Content()
	if err != nil {
		return nil, nil, err
	}
	return parts[0], sig, nil
}

// verify checks the signature over the signed part as received and, when
// that fails on the content digest and the part has bare LF line endings,
// over its CRLF form (a transport may have converted the line endings of
// text the signer canonicalised). It returns the bytes that verified.
func verify(sig, signed []byte, opts UnpackOptions) (*cms.SignerInfo, []byte, error) {
	vo := cms.VerifyOptions{Time: opts.VerifyTime, AllowSHA1: opts.AllowSHA1}
	info, err := cms.VerifyDetached(sig, signed, opts.PartnerCertificates, vo)
	if errors.Is(err, cms.ErrIntegrity) && hasBareLF(signed) {
		canon := toCRLF(signed)
		if info2, err2 := cms.VerifyDetached(sig, canon, opts.PartnerCertificates, vo); err2 == nil || !errors.Is(err2, cms.ErrIntegrity) {
			return info2, canon, err2
		}
	}
	return info, signed, err
}

func hasBareLF(b []byte) bool {
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			return true
		}
	}
	return false
}

func toCRLF(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b) + len(b)/32)
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			out.WriteByte('\r')
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}
