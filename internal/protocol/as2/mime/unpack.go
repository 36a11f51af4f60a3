package mime

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
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
	// MICPreference chooses between the requested MIC algorithm and the
	// signature's digest when they differ.
	MICPreference MICPreference
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
	// the decrypted or decompressed entity with its headers, else the
	// payload alone.
	MICContent []byte
	// MIC is computed over MICContent with the algorithm chosen from the
	// request's signed-receipt-micalg and the signature.
	MIC MIC
	// DispositionOptions is the parsed request header.
	DispositionOptions DispositionOptions
}

// MICWith computes the MIC over the same content with another algorithm.
func (r *Result) MICWith(alg cms.DigestAlgorithm) MIC { return ComputeMIC(r.MICContent, alg) }

// Unpack opens an AS2 message: contentType and body are the HTTP request's,
// header the rest of its header fields (Content-Transfer-Encoding and
// Content-Disposition matter when the body is the payload itself;
// Disposition-Notification-Options picks the MIC algorithm). Encryption,
// signature and compression are peeled in whatever order the sender layered
// them. On error the partial result (layers seen so far, the signer's digest
// once known) is returned with it, so a receiver can still compose its MDN.
func Unpack(contentType string, header http.Header, body []byte, opts UnpackOptions) (*Result, error) {
	limit := opts.MaxDecompressedSize
	if limit <= 0 {
		limit = DefaultMaxDecompressedSize
	}
	res := &Result{DispositionOptions: ParseDispositionOptions(header.Get("Disposition-Notification-Options"))}
	top := textproto.MIMEHeader{"Content-Type": {contentType}}
	for _, k := range []string{"Content-Transfer-Encoding", "Content-Disposition"} {
		if v := header.Get(k); v != "" {
			top.Set(k, v)
		}
	}
	entity := &Entity{Header: top, Body: body, Raw: body}
	var unwrapped []byte // the last decrypted or decompressed entity
	for depth := 0; ; depth++ {
		if depth > maxLayers {
			return res, fmt.Errorf("%w: more than %d layers", ErrMalformed, maxLayers)
		}
		mt, params, err := entity.MediaType()
		if err != nil {
			return res, err
		}
		var inner []byte
		switch {
		case mt == "multipart/signed":
			signed, sig, err := signedParts(entity, params)
			if err != nil {
				return res, err
			}
			res.Layers = append(res.Layers, LayerSigned)
			res.Signed = true
			info, signedBytes, err := verify(sig, signed, opts)
			if info != nil && res.Signer == nil {
				res.Signer = info
			}
			if err != nil {
				return res, err
			}
			if res.SignedContent == nil {
				res.SignedContent = signedBytes
			}
			inner = signedBytes
		case mt == "application/pkcs7-mime" || mt == "application/x-pkcs7-mime":
			data, err := entity.Content()
			if err != nil {
				return res, err
			}
			kind, err := smimeKind(params["smime-type"], data)
			if err != nil {
				return res, err
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
					return res, err
				}
				inner = plain
			case cms.KindCompressedData:
				res.Layers = append(res.Layers, LayerCompressed)
				res.Compressed = true
				plain, err := cms.Decompress(data, limit)
				if err != nil {
					return res, err
				}
				inner = plain
			default:
				return res, fmt.Errorf("%w: application/pkcs7-mime with %s", ErrUnsupportedLayer, kind)
			}
			unwrapped = inner
		default:
			return res, finish(res, entity, unwrapped, opts)
		}
		if entity, err = ParseEntity(inner); err != nil {
			return res, err
		}
	}
}

func finish(res *Result, payload *Entity, unwrapped []byte, opts UnpackOptions) error {
	content, err := payload.Content()
	if err != nil {
		return err
	}
	res.Payload = content
	res.ContentType = payload.Header.Get("Content-Type")
	res.RawFileName = payload.FileName()
	res.FileName = sanitizeFileName(res.RawFileName)
	switch {
	case res.SignedContent != nil:
		res.MICContent = res.SignedContent
	case unwrapped != nil:
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

// sanitizeFileName keeps the last path element of a sent name and returns
// it when it is a valid bare file name.
func sanitizeFileName(raw string) persistence.FileName {
	if raw == "" {
		return ""
	}
	name := raw
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = path.Clean(strings.TrimSpace(name))
	fn, err := persistence.ParseFileName(name)
	if err != nil {
		return ""
	}
	return fn
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
