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
	gomime "mime"
	"net/http"
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

	newBoundary func() string // tests make boundaries predictable
}

// Built is an outbound AS2 message.
type Built struct {
	// ContentType is the HTTP Content-Type.
	ContentType string
	// Header holds the other MIME fields that travel as HTTP headers.
	Header http.Header
	Body   []byte
	// MIC is what the partner should return for MICAlgorithm.
	MIC MIC
	// ExpectedMICs are the values a correct partner may return: the MIC for
	// the requested algorithm and, when it differs, the one for the signing
	// digest (products disagree on which to use).
	ExpectedMICs []MIC
	// MICContent is what the MICs cover.
	MICContent []byte
}

// MICWith computes the MIC over the same content with another algorithm.
func (b *Built) MICWith(alg cms.DigestAlgorithm) MIC { return ComputeMIC(b.MICContent, alg) }

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
// (omitted when empty).
func Build(payload []byte, fileName string, opts BuildOptions) (*Built, error) {
	if opts.newBoundary == nil {
		opts.newBoundary = randomBoundary
	}
	ct := opts.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	if _, _, err := gomime.ParseMediaType(ct); err != nil {
		return nil, fmt.Errorf("build: payload content type %q: %w", ct, err)
	}
	disposition := "attachment"
	if fileName != "" {
		disposition = gomime.FormatMediaType("attachment", map[string]string{"filename": fileName})
		if disposition == "" {
			return nil, fmt.Errorf("build: file name %q cannot be written in Content-Disposition", fileName)
		}
	}
	out := &Built{Header: http.Header{}}
	entity := buildEntity([][2]string{
		{"Content-Type", ct},
		{"Content-Transfer-Encoding", "binary"},
		{"Content-Disposition", disposition},
	}, payload)
	layered := false
	var micContent []byte

	if opts.Compress {
		der, err := cms.Compress(entity)
		if err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
		micContent = entity
		entity = buildEntity(pkcs7MimeFields("compressed-data", "smime.p7z"), der)
		layered = true
	}
	var signDigest cms.DigestAlgorithm
	if opts.Sign != nil {
		signed, err := signEntity(entity, opts.Sign, opts.newBoundary)
		if err != nil {
			return nil, err
		}
		micContent = entity
		signDigest = digestOrDefault(opts.Sign.Digest)
		entity = signed
		layered = true
	}
	if opts.Encrypt != nil {
		if micContent == nil {
			micContent = entity
		}
		der, err := cms.Encrypt(entity, opts.Encrypt.Recipients, opts.Encrypt.EncryptOptions)
		if err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
		smimeType := "enveloped-data"
		if opts.Encrypt.Cipher.AEAD() {
			smimeType = "authEnveloped-data"
		}
		entity = buildEntity(pkcs7MimeFields(smimeType, "smime.p7m"), der)
		layered = true
	}

	if !layered {
		// Nothing to wrap: the payload's own fields become HTTP headers and
		// the MIC covers the content alone.
		out.ContentType = ct
		out.Header.Set("Content-Transfer-Encoding", "binary")
		out.Header.Set("Content-Disposition", disposition)
		out.Body = payload
		micContent = payload
	} else {
		e, err := ParseEntity(entity)
		if err != nil {
			return nil, err
		}
		out.ContentType = e.Header.Get("Content-Type")
		for k, v := range e.Header {
			if k != "Content-Type" {
				out.Header[k] = v
			}
		}
		out.Body = e.Body
	}
	out.MICContent = micContent
	micAlg := opts.MICAlgorithm
	if micAlg == "" {
		micAlg = signDigest
	}
	if micAlg == "" {
		micAlg = cms.SHA256
	}
	out.MIC = ComputeMIC(micContent, micAlg)
	out.ExpectedMICs = []MIC{out.MIC}
	if signDigest != "" && signDigest != micAlg {
		out.ExpectedMICs = append(out.ExpectedMICs, ComputeMIC(micContent, signDigest))
	}
	return out, nil
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
	var b bytes.Buffer
	b.Grow(len(body) + 256)
	for _, f := range fields {
		b.WriteString(f[0])
		b.WriteString(": ")
		b.WriteString(cleanField(f[1]))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
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
	digest := digestOrDefault(s.Digest)
	sign := cms.SignDetached
	if s.PSS {
		sign = cms.SignDetachedPSS
	}
	sig, err := sign(entity, s.Certificate, s.Key, s.Chain, digest)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	boundary := newBoundary()
	for bytes.Contains(entity, []byte(boundary)) {
		boundary = randomBoundary()
	}
	var body bytes.Buffer
	body.Grow(len(entity) + len(sig)*2 + 512)
	body.WriteString("--" + boundary + "\r\n")
	body.Write(entity)
	body.WriteString("\r\n--" + boundary + "\r\n")
	body.Write(buildEntity([][2]string{
		{"Content-Type", `application/pkcs7-signature; name="smime.p7s"; smime-type=signed-data`},
		{"Content-Transfer-Encoding", "base64"},
		{"Content-Disposition", `attachment; filename="smime.p7s"`},
	}, base64Lines(sig)))
	body.WriteString("--" + boundary + "--\r\n")
	ct := fmt.Sprintf(`multipart/signed; protocol="application/pkcs7-signature"; micalg=%s; boundary="%s"`,
		digest.MICName(), boundary)
	return buildEntity([][2]string{{"Content-Type", ct}}, body.Bytes()), nil
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
