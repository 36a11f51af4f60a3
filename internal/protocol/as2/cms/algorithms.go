package cms

import (
	"crypto"
	_ "crypto/sha1" // SHA-1 digests of partners that are allowed them
	_ "crypto/sha256"
	_ "crypto/sha512"
	"encoding/asn1"
	"fmt"
	"strings"
)

var (
	oidData                = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidSignedData          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidEnvelopedData       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 3}
	oidAuthEnvelopedData   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 1, 23}
	oidCompressedData      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 1, 9}
	oidZlibCompress        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 3, 8}
	oidAttrContentType     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidAttrMessageDigest   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidAttrSigningTime     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 5}
	oidAttrAlgorithmProtec = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 52}

	oidSHA1   = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}
	oidSHA256 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
	oidSHA384 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
	oidSHA512 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}

	oidRSAEncryption = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}
	oidRSAESOAEP     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 7}
	oidMGF1          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 8}
	oidPSpecified    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 9}
	oidRSASSAPSS     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}
	oidSHA1WithRSA   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 5}
	oidSHA256WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}
	oidSHA384WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 12}
	oidSHA512WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 13}
	oidECDSASHA1     = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 1}
	oidECDSASHA256   = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}
	oidECDSASHA384   = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 3}
	oidECDSASHA512   = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 4}
	oidECPublicKey   = asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}

	oidAES128CBC = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidAES128GCM = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 6}
	oidAES256GCM = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 46}
	oidDESEDE3   = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

// DigestAlgorithm is a message digest used for signatures and MICs. The
// canonical spelling is the one of the AS2 profile ("sha256"); AS2 headers
// use RFC 5751's spelling ("sha-256"), which MICName returns.
type DigestAlgorithm string

// The digest algorithms this package knows.
const (
	SHA1   DigestAlgorithm = "sha1"
	SHA256 DigestAlgorithm = "sha256"
	SHA384 DigestAlgorithm = "sha384"
	SHA512 DigestAlgorithm = "sha512"
)

// DigestAlgorithms is the canonical list, strongest last.
var DigestAlgorithms = []DigestAlgorithm{SHA1, SHA256, SHA384, SHA512}

var digestSeparators = strings.NewReplacer("-", "", "_", "")

// ParseDigestAlgorithm accepts the canonical names and the spellings seen on
// the wire: "sha-256", "SHA256", "sha_256" (case and separators ignored).
func ParseDigestAlgorithm(s string) (DigestAlgorithm, error) {
	n := digestSeparators.Replace(strings.ToLower(strings.TrimSpace(s)))
	for _, d := range DigestAlgorithms {
		if string(d) == n {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: digest algorithm %q", ErrUnsupportedAlgorithm, s)
}

// Hash is the crypto.Hash of the algorithm.
func (d DigestAlgorithm) Hash() crypto.Hash {
	switch d {
	case SHA1:
		return crypto.SHA1
	case SHA256:
		return crypto.SHA256
	case SHA384:
		return crypto.SHA384
	case SHA512:
		return crypto.SHA512
	}
	return 0
}

// MICName is the RFC 5751 name used in micalg parameters and
// Received-Content-MIC fields.
func (d DigestAlgorithm) MICName() string {
	if d == "" {
		return ""
	}
	return "sha-" + strings.TrimPrefix(string(d), "sha")
}

// Weak reports whether the digest is refused unless a profile allows it.
func (d DigestAlgorithm) Weak() bool { return d == SHA1 }

func (d DigestAlgorithm) oid() asn1.ObjectIdentifier {
	switch d {
	case SHA1:
		return oidSHA1
	case SHA256:
		return oidSHA256
	case SHA384:
		return oidSHA384
	case SHA512:
		return oidSHA512
	}
	return nil
}

func digestForOID(oid asn1.ObjectIdentifier) (DigestAlgorithm, error) {
	for _, d := range DigestAlgorithms {
		if oid.Equal(d.oid()) {
			return d, nil
		}
	}
	name := oid.String()
	for _, u := range unsupportedDigests {
		if oid.Equal(u.oid) {
			name = u.name + " (" + name + ")"
		}
	}
	return "", fmt.Errorf("%w: digest algorithm %s; signatures must use SHA-256, SHA-384 or SHA-512 (SHA-1 where the partner profile allows it)",
		ErrUnsupportedAlgorithm, name)
}

// unsupportedDigests names digests that partners' products offer (pyas2-lib: MD5 and
// SHA-224) but Wharf does not verify, so a refusal names them rather than an OID alone.
var unsupportedDigests = []struct {
	oid  asn1.ObjectIdentifier
	name string
}{
	{asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 5}, "MD5"},
	{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 4}, "SHA-224"},
}

// ContentCipher is the symmetric content-encryption algorithm.
type ContentCipher string

// The content ciphers this package knows. 3DES is accepted inbound only.
const (
	AES128CBC ContentCipher = "aes128-cbc"
	AES192CBC ContentCipher = "aes192-cbc"
	AES256CBC ContentCipher = "aes256-cbc"
	AES128GCM ContentCipher = "aes128-gcm"
	AES256GCM ContentCipher = "aes256-gcm"
	DES3CBC   ContentCipher = "3des-cbc"
)

// ContentCiphers is the canonical list.
var ContentCiphers = []ContentCipher{AES128CBC, AES192CBC, AES256CBC, AES128GCM, AES256GCM, DES3CBC}

// ParseContentCipher accepts the canonical names, case-insensitively.
func ParseContentCipher(s string) (ContentCipher, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	for _, c := range ContentCiphers {
		if string(c) == n {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: content cipher %q", ErrUnsupportedAlgorithm, s)
}

// AEAD reports whether the cipher is authenticated (AuthEnvelopedData).
func (c ContentCipher) AEAD() bool { return c == AES128GCM || c == AES256GCM }

// Outbound reports whether this package encrypts with the cipher.
func (c ContentCipher) Outbound() bool { return c != DES3CBC && c.keyLen() > 0 }

func (c ContentCipher) keyLen() int {
	switch c {
	case AES128CBC, AES128GCM:
		return 16
	case AES192CBC, DES3CBC:
		return 24
	case AES256CBC, AES256GCM:
		return 32
	}
	return 0
}

func (c ContentCipher) oid() asn1.ObjectIdentifier {
	switch c {
	case AES128CBC:
		return oidAES128CBC
	case AES192CBC:
		return oidAES192CBC
	case AES256CBC:
		return oidAES256CBC
	case AES128GCM:
		return oidAES128GCM
	case AES256GCM:
		return oidAES256GCM
	case DES3CBC:
		return oidDESEDE3
	}
	return nil
}

func cipherForOID(oid asn1.ObjectIdentifier) (ContentCipher, error) {
	for _, c := range ContentCiphers {
		if oid.Equal(c.oid()) {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: content encryption algorithm %s", ErrUnsupportedAlgorithm, oid)
}

// KeyTransport is how the content-encryption key is wrapped for a recipient.
type KeyTransport string

// The key transport algorithms this package knows (RSA only).
const (
	RSAPKCS1v15   KeyTransport = "rsa-pkcs1v15"
	RSAOAEPSHA1   KeyTransport = "rsa-oaep-sha1"
	RSAOAEPSHA256 KeyTransport = "rsa-oaep-sha256"
)

// KeyTransports is the canonical list.
var KeyTransports = []KeyTransport{RSAPKCS1v15, RSAOAEPSHA1, RSAOAEPSHA256}

// ParseKeyTransport accepts the canonical names, case-insensitively.
func ParseKeyTransport(s string) (KeyTransport, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	for _, k := range KeyTransports {
		if string(k) == n {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w: key transport %q", ErrUnsupportedAlgorithm, s)
}

// SignatureScheme is the RSA padding of a signature (ECDSA keys have one
// scheme and report SchemeECDSA).
type SignatureScheme string

// Signature schemes.
const (
	SchemePKCS1v15 SignatureScheme = "rsa-pkcs1v15"
	SchemePSS      SignatureScheme = "rsa-pss"
	SchemeECDSA    SignatureScheme = "ecdsa"
)
