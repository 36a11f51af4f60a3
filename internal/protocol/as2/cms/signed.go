package cms

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smallstep/pkcs7"
)

// SignerInfo describes a verified signature.
type SignerInfo struct {
	// Digest is the signer's digest algorithm; AS2 falls back to it for the
	// MIC when the partner asked for none we support.
	Digest      DigestAlgorithm
	Scheme      SignatureScheme
	Certificate *x509.Certificate
	// SigningTime is the signed signing-time attribute, zero when absent.
	SigningTime time.Time
	// AlgorithmProtection reports an RFC 6211 attribute, which was checked.
	AlgorithmProtection bool
	// Tolerances says how a signature that departs from the standard was
	// read, one note each (for example RSASSA-PSS without parameters); the
	// receiver records them on the message.
	Tolerances []string
	// ReplayDigest is SHA-256 over the signed attributes in DER, or over
	// the content when there are none. It identifies the signature act
	// regardless of how the SignedData was encoded or which certificates it
	// carries, so a receiver can refuse a replayed signature.
	ReplayDigest []byte

	// pssHash is the hash an RSASSA-PSS signature was verified with, which
	// may differ from Digest; SHA-1 there is as weak as a SHA-1 Digest.
	pssHash DigestAlgorithm
}

// VerifyOptions tunes VerifyDetached.
type VerifyOptions struct {
	// Time is when certificate validity is judged; zero means now.
	Time time.Time
	// AllowSHA1 accepts SHA-1 signatures. Without it a valid SHA-1
	// signature returns ErrInsufficientSecurity (with its SignerInfo).
	AllowSHA1 bool
}

// SignOptions are the choices of a signature beyond the key and the digest.
type SignOptions struct {
	// AlgorithmProtection adds the RFC 6211 attribute naming the digest and
	// signature algorithms among the signed attributes. Some products (IBM's
	// among them) require it; others have been seen to stumble over an
	// attribute they do not know, so it is the partner profile's choice.
	AlgorithmProtection bool
}

// SignDetached signs content with an RSA (PKCS #1 v1.5) or ECDSA key and
// returns a DER SignedData without the content, carrying cert and chain and
// the signed attributes content type, signing time and message digest.
func SignDetached(content []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm) ([]byte, error) {
	return SignDetachedWith(content, cert, key, chain, digest, SignOptions{})
}

// SignDetachedWith is SignDetached with the options, the RFC 6211 attribute
// among them.
func SignDetachedWith(content []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm, opts SignOptions) ([]byte, error) {
	if digest.Hash() == 0 {
		return nil, fmt.Errorf("%w: digest %q", ErrUnsupportedAlgorithm, digest)
	}
	if cert == nil || key == nil {
		return nil, errors.New("sign: certificate and key are required")
	}
	sigAlg, err := pkcs1SignatureOID(key.Public(), digest)
	if err != nil {
		return nil, err
	}
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	sd.SetDigestAlgorithm(digest.oid())
	var config pkcs7.SignerInfoConfig
	if opts.AlgorithmProtection {
		protection := algorithmProtection(digest, derSequence(mustMarshal(sigAlg)))
		config.ExtraSignedAttributes = []pkcs7.Attribute{
			{Type: oidAttrAlgorithmProtec, Value: asn1.RawValue{FullBytes: protection}},
		}
	}
	if len(chain) > 0 {
		err = sd.AddSignerChain(cert, key, chain, config)
	} else {
		err = sd.AddSigner(cert, key, config)
	}
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return der, nil
}

// SignDetachedPSS is SignDetached with RSASSA-PSS (RFC 4056): MGF1 with the
// same digest and a salt as long as the digest.
func SignDetachedPSS(content []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm) ([]byte, error) {
	return SignDetachedPSSWith(content, cert, key, chain, digest, SignOptions{})
}

// SignDetachedPSSWith is SignDetachedPSS with the options.
func SignDetachedPSSWith(content []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm, opts SignOptions) ([]byte, error) {
	h := digest.Hash()
	if h == 0 {
		return nil, fmt.Errorf("%w: digest %q", ErrUnsupportedAlgorithm, digest)
	}
	md := h.New()
	md.Write(content)
	return SignDigestWith(md.Sum(nil), cert, key, chain, digest, true, opts)
}

// SignDigest makes the signature SignDetachedPSS makes from the content's
// digest, md, instead of the content: a caller that hashes the content anyway,
// for a MIC, need not read it twice. With pss false it writes a PKCS #1 v1.5
// signature the way pkcs7 does; SignDetached, which goes through pkcs7, is the
// one the gateway uses for those.
func SignDigest(md []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm, pss bool) ([]byte, error) {
	return SignDigestWith(md, cert, key, chain, digest, pss, SignOptions{})
}

// SignDigestWith is SignDigest with the options.
func SignDigestWith(md []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm, pss bool, opts SignOptions) ([]byte, error) {
	return signDigest(md, cert, key, chain, digest, pss, opts, time.Now())
}

// signDigest builds the SignedData by hand rather than through pkcs7, whose
// SignedData takes the content and copies it whole into an OCTET STRING only
// to drop it for a detached signature.
func signDigest(md []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm, pss bool, opts SignOptions, at time.Time) ([]byte, error) {
	h := digest.Hash()
	if h == 0 {
		return nil, fmt.Errorf("%w: digest %q", ErrUnsupportedAlgorithm, digest)
	}
	if len(md) != h.Size() {
		return nil, fmt.Errorf("sign: a %s digest of %d bytes", digest, len(md))
	}
	if cert == nil || key == nil {
		return nil, errors.New("sign: certificate and key are required")
	}
	var (
		sigAlg   []byte
		hashOpts crypto.SignerOpts = h
	)
	if pss {
		if _, ok := key.Public().(*rsa.PublicKey); !ok {
			return nil, fmt.Errorf("%w: RSA-PSS needs an RSA key", ErrUnsupportedAlgorithm)
		}
		hashAlg := derSequence(mustMarshal(digest.oid()), []byte{tagNull, 0})
		pssParams := derSequence(
			derExplicit(0, hashAlg),
			derExplicit(1, derSequence(mustMarshal(oidMGF1), hashAlg)),
			derExplicit(2, mustMarshal(h.Size())),
		)
		sigAlg = derSequence(mustMarshal(oidRSASSAPSS), pssParams)
		hashOpts = &rsa.PSSOptions{SaltLength: h.Size(), Hash: h}
	} else {
		oid, err := pkcs1SignatureOID(key.Public(), digest)
		if err != nil {
			return nil, err
		}
		sigAlg = derSequence(mustMarshal(oid))
	}
	// Each certificate of the chain must have issued the one before it.
	for i, issued := 0, cert; i < len(chain); i, issued = i+1, chain[i] {
		if err := issued.CheckSignatureFrom(chain[i]); err != nil {
			return nil, fmt.Errorf("sign: certificate %q is not issued by the next one of the chain: %w", issued.Subject.CommonName, err)
		}
	}
	digestAlg := derSequence(mustMarshal(digest.oid()))

	attrs := [][]byte{
		attribute(oidAttrContentType, mustMarshal(oidData)),
		attribute(oidAttrSigningTime, mustMarshal(at.UTC())),
		attribute(oidAttrMessageDigest, derOctets(md)),
	}
	if opts.AlgorithmProtection {
		attrs = append(attrs, attribute(oidAttrAlgorithmProtec, algorithmProtection(digest, sigAlg)))
	}
	slices.SortFunc(attrs, bytes.Compare) // DER orders a SET OF by encoding
	signedAttrs := derSet(attrs...)
	ad := h.New()
	ad.Write(signedAttrs)
	sig, err := key.Sign(rand.Reader, ad.Sum(nil), hashOpts)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	_, attrContent, _ := splitDER(signedAttrs)
	signerInfo := derSequence(
		mustMarshal(1),
		derSequence(cert.RawIssuer, mustMarshal(cert.SerialNumber)),
		digestAlg,
		derTLV(classContext, 0, true, attrContent),
		sigAlg,
		derOctets(sig),
	)
	var certs [][]byte
	for _, c := range append([]*x509.Certificate{cert}, chain...) {
		certs = append(certs, c.Raw)
	}
	sd := derSequence(
		mustMarshal(1),
		derSet(digestAlg),
		derSequence(mustMarshal(oidData)),
		derTLV(classContext, 0, true, certs...),
		derSet(signerInfo),
	)
	return contentInfo(oidSignedData, sd), nil
}

func attribute(oid asn1.ObjectIdentifier, value []byte) []byte {
	return derSequence(mustMarshal(oid), derSet(value))
}

// algorithmProtection encodes CMSAlgorithmProtection with the signature
// algorithm as [1] IMPLICIT.
func algorithmProtection(digest DigestAlgorithm, sigAlg []byte) []byte {
	_, content, _ := splitDER(sigAlg)
	return derSequence(derSequence(mustMarshal(digest.oid())), derTLV(classContext, 1, true, content))
}

// pkcs1SignatureOID is the signatureAlgorithm for the key, as pkcs7 writes
// it too.
func pkcs1SignatureOID(pub crypto.PublicKey, d DigestAlgorithm) (asn1.ObjectIdentifier, error) {
	switch pub.(type) {
	case *rsa.PublicKey:
		return map[DigestAlgorithm]asn1.ObjectIdentifier{
			SHA1: oidSHA1WithRSA, SHA256: oidSHA256WithRSA, SHA384: oidSHA384WithRSA, SHA512: oidSHA512WithRSA,
		}[d], nil
	case *ecdsa.PublicKey:
		return map[DigestAlgorithm]asn1.ObjectIdentifier{
			SHA1: oidECDSASHA1, SHA256: oidECDSASHA256, SHA384: oidECDSASHA384, SHA512: oidECDSASHA512,
		}[d], nil
	}
	return nil, fmt.Errorf("%w: signing key %T", ErrUnsupportedAlgorithm, pub)
}

type signedDataASN struct {
	Version          int
	DigestAlgorithms asn1.RawValue
	EncapContentInfo struct {
		EContentType asn1.ObjectIdentifier
		EContent     asn1.RawValue `asn1:"optional,explicit,tag:0"`
	}
	Certificates asn1.RawValue `asn1:"optional,tag:0"`
	CRLs         asn1.RawValue `asn1:"optional,tag:1"`
	SignerInfos  asn1.RawValue
}

type signerInfoASN struct {
	Version            int
	SID                asn1.RawValue
	DigestAlgorithm    pkix.AlgorithmIdentifier
	SignedAttrs        asn1.RawValue `asn1:"optional,tag:0"`
	SignatureAlgorithm pkix.AlgorithmIdentifier
	Signature          []byte
	UnsignedAttrs      asn1.RawValue `asn1:"optional,tag:1"`
}

type attributeASN struct {
	Type   asn1.ObjectIdentifier
	Values asn1.RawValue
}

type pssParamsASN struct {
	Hash       pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:0"`
	MGF        pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:1"`
	SaltLength int                      `asn1:"optional,explicit,tag:2,default:20"`
	Trailer    int                      `asn1:"optional,explicit,tag:3,default:1"`
}

// VerifyDetached verifies a detached SignedData (BER or DER) over content.
// Only the trusted certificates vouch for a signer: the signer certificate
// must be one of them, or be embedded in the signature and issued by one of
// them. Nothing is chained to system roots. A signer certificate outside its
// validity at opts.Time fails with a *CertificateValidityError; a signing
// time outside the validity fails too. Every signer must verify; the first
// one is described in the result.
func VerifyDetached(sig, content []byte, trusted []*x509.Certificate, opts VerifyOptions) (*SignerInfo, error) {
	return verifyDetached(sig, signedContent{data: content}, trusted, opts)
}

// VerifyDigest is VerifyDetached for content that was hashed as it went by and is no
// longer held: digests gives the content's digest by algorithm, and a signer whose
// digest algorithm is missing from it fails with ErrAuthentication. The signature must
// carry signed attributes (every AS2 product signs so): without them the signature is
// over the content itself, which is gone.
func VerifyDigest(sig []byte, digests map[DigestAlgorithm][]byte, trusted []*x509.Certificate, opts VerifyOptions) (*SignerInfo, error) {
	return verifyDetached(sig, signedContent{digests: digests}, trusted, opts)
}

// signedContent is what a detached signature covers: the content itself, or only its
// digests.
type signedContent struct {
	data    []byte
	digests map[DigestAlgorithm][]byte
}

// digest is the content's digest with d.
func (c signedContent) digest(d DigestAlgorithm) ([]byte, error) {
	if c.digests == nil {
		md := d.Hash().New()
		md.Write(c.data)
		return md.Sum(nil), nil
	}
	if sum, ok := c.digests[d]; ok {
		return sum, nil
	}
	return nil, fmt.Errorf("%w: the content's %s digest was not computed as it was received", ErrAuthentication, d)
}

func verifyDetached(sig []byte, content signedContent, trusted []*x509.Certificate, opts VerifyOptions) (*SignerInfo, error) {
	der, err := normalizeBER(sig)
	if err != nil {
		return nil, malformed(ErrAuthentication, "signature: %v", err)
	}
	var ci struct {
		ContentType asn1.ObjectIdentifier
		Content     asn1.RawValue `asn1:"explicit,tag:0"`
	}
	if rest, err := asn1.Unmarshal(der, &ci); err != nil || len(rest) > 0 {
		return nil, malformed(ErrAuthentication, "signature: %v", err)
	}
	if !ci.ContentType.Equal(oidSignedData) {
		return nil, fmt.Errorf("%w: signature is %s, not signed data", ErrAuthentication, ci.ContentType)
	}
	var sd signedDataASN
	if rest, err := asn1.Unmarshal(ci.Content.Bytes, &sd); err != nil || len(rest) > 0 {
		return nil, malformed(ErrAuthentication, "signed data: %v", err)
	}
	embedded := parseCertificateSet(sd.Certificates.Bytes)
	var signers []signerInfoASN
	for rest := sd.SignerInfos.Bytes; len(rest) > 0; {
		var si signerInfoASN
		if rest, err = asn1.Unmarshal(rest, &si); err != nil {
			return nil, malformed(ErrAuthentication, "signer info: %v", err)
		}
		signers = append(signers, si)
	}
	if len(signers) == 0 {
		return nil, fmt.Errorf("%w: the signature has no signer", ErrAuthentication)
	}
	at := opts.Time
	if at.IsZero() {
		at = time.Now()
	}
	var first *SignerInfo
	weak := false
	for i, si := range signers {
		info, err := verifySigner(der, i, si, sd.EncapContentInfo.EContentType, content, trusted, embedded, at)
		if err != nil {
			return info, err
		}
		if first == nil {
			first = info
		}
		weak = weak || info.Digest.Weak() || info.pssHash.Weak()
	}
	if weak && !opts.AllowSHA1 {
		return first, fmt.Errorf("%w: the signature uses SHA-1", ErrInsufficientSecurity)
	}
	return first, nil
}

func parseCertificateSet(b []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for len(b) > 0 {
		var raw asn1.RawValue
		rest, err := asn1.Unmarshal(b, &raw)
		if err != nil {
			break
		}
		b = rest
		if raw.Class != classUniversal || raw.Tag != tagSequence {
			continue // attribute or other certificate formats
		}
		if c, err := x509.ParseCertificate(raw.FullBytes); err == nil {
			certs = append(certs, c)
		}
	}
	return certs
}

func verifySigner(der []byte, idx int, si signerInfoASN, eContentType asn1.ObjectIdentifier, content signedContent,
	trusted, embedded []*x509.Certificate, at time.Time) (*SignerInfo, error) {
	digest, err := digestForOID(si.DigestAlgorithm.Algorithm)
	if err != nil {
		return nil, err
	}
	info := &SignerInfo{Digest: digest}
	scheme, pss, err := signatureScheme(si.SignatureAlgorithm)
	if err != nil {
		return info, err
	}
	info.Scheme = scheme
	cert, err := signerCertificate(si.SID, trusted, embedded, at)
	if err != nil {
		return info, err
	}
	info.Certificate = cert
	if at.Before(cert.NotBefore) || at.After(cert.NotAfter) {
		return info, &CertificateValidityError{Subject: cert.Subject.String(), NotBefore: cert.NotBefore, NotAfter: cert.NotAfter, At: at}
	}

	contentDigest, err := content.digest(digest)
	if err != nil {
		return info, err
	}
	signed := content.data
	if len(si.SignedAttrs.FullBytes) == 0 && content.digests != nil {
		return info, fmt.Errorf("%w: a signature without signed attributes covers the content itself, which a streamed message does not keep", ErrAuthentication)
	}
	if len(si.SignedAttrs.FullBytes) > 0 {
		signed = derSet(si.SignedAttrs.Bytes) // signed as a universal SET
		if err := checkSignedAttributes(si, info, eContentType, contentDigest); err != nil {
			return info, err
		}
		if !info.SigningTime.IsZero() && (info.SigningTime.Before(cert.NotBefore) || info.SigningTime.After(cert.NotAfter)) {
			return info, &CertificateValidityError{Subject: cert.Subject.String(), NotBefore: cert.NotBefore, NotAfter: cert.NotAfter, At: info.SigningTime}
		}
	}

	replay := sha256.Sum256(signed)
	info.ReplayDigest = replay[:]

	switch {
	case pss != nil:
		pub, ok := cert.PublicKey.(*rsa.PublicKey)
		if !ok {
			return info, fmt.Errorf("%w: RSA-PSS signature from a non-RSA certificate", ErrAuthentication)
		}
		if pss.absent {
			hash, note, err := verifyPSSWithoutParameters(pub, digest, signed, si.Signature)
			if err != nil {
				return info, err
			}
			info.pssHash = hash
			info.Tolerances = append(info.Tolerances, note)
			break
		}
		if err := verifyPSS(pub, pss.hash, pss.salt, signed, si.Signature); err != nil {
			return info, err
		}
		info.pssHash = pss.hash
	case si.SID.Class == classUniversal && content.digests == nil:
		// issuerAndSerialNumber: the pkcs7 package checks it, against this
		// one certificate only.
		p7, err := pkcs7.Parse(der)
		if err != nil || idx >= len(p7.Signers) {
			return info, malformed(ErrAuthentication, "signed data: %v", err)
		}
		p7.Content = content.data
		p7.Certificates = []*x509.Certificate{cert}
		p7.Signers = p7.Signers[idx : idx+1]
		if err := p7.Verify(); err != nil {
			return info, fmt.Errorf("%w: %w", ErrAuthentication, err)
		}
	default:
		sigAlg, err := x509SignatureAlgorithm(scheme, digest)
		if err != nil {
			return info, err
		}
		if err := cert.CheckSignature(sigAlg, signed, si.Signature); err != nil {
			return info, fmt.Errorf("%w: %w", ErrAuthentication, err)
		}
	}
	return info, nil
}

// checkSignedAttributes checks the message digest, the content type and
// the algorithm protection, and records the signing time.
func checkSignedAttributes(si signerInfoASN, info *SignerInfo, eContentType asn1.ObjectIdentifier, contentDigest []byte) error {
	var sawDigest, sawType bool
	for rest := si.SignedAttrs.Bytes; len(rest) > 0; {
		var a attributeASN
		var err error
		if rest, err = asn1.Unmarshal(rest, &a); err != nil {
			return malformed(ErrAuthentication, "signed attribute: %v", err)
		}
		var value asn1.RawValue
		if _, err := asn1.Unmarshal(a.Values.Bytes, &value); err != nil {
			return malformed(ErrAuthentication, "signed attribute %s: %v", a.Type, err)
		}
		switch {
		case a.Type.Equal(oidAttrMessageDigest):
			var got []byte
			if _, err := asn1.Unmarshal(value.FullBytes, &got); err != nil {
				return malformed(ErrAuthentication, "message digest: %v", err)
			}
			if subtle.ConstantTimeCompare(got, contentDigest) != 1 {
				return fmt.Errorf("%w: the content does not match the signed digest", ErrIntegrity)
			}
			sawDigest = true
		case a.Type.Equal(oidAttrContentType):
			var ct asn1.ObjectIdentifier
			if _, err := asn1.Unmarshal(value.FullBytes, &ct); err != nil || !ct.Equal(eContentType) {
				return fmt.Errorf("%w: the signed content type does not match", ErrAuthentication)
			}
			sawType = true
		case a.Type.Equal(oidAttrSigningTime):
			var t time.Time
			if _, err := asn1.Unmarshal(value.FullBytes, &t); err == nil {
				info.SigningTime = t
			}
		case a.Type.Equal(oidAttrAlgorithmProtec):
			if err := checkAlgorithmProtection(value.FullBytes, si); err != nil {
				return err
			}
			info.AlgorithmProtection = true
		}
	}
	if !sawDigest || !sawType {
		return fmt.Errorf("%w: signed attributes lack the message digest or content type", ErrAuthentication)
	}
	return nil
}

// checkAlgorithmProtection compares the RFC 6211 attribute with the
// SignerInfo's own algorithm identifiers. The attribute is signed, so a
// mismatch means the unsigned identifiers were altered after signing: an
// integrity failure.
func checkAlgorithmProtection(value []byte, si signerInfoASN) error {
	var ap struct {
		Digest    pkix.AlgorithmIdentifier
		Signature asn1.RawValue `asn1:"optional,tag:1"`
		MAC       asn1.RawValue `asn1:"optional,tag:2"`
	}
	if rest, err := asn1.Unmarshal(value, &ap); err != nil || len(rest) > 0 {
		return malformed(ErrIntegrity, "algorithm protection: %v", err)
	}
	if len(ap.Signature.FullBytes) == 0 || len(ap.MAC.FullBytes) > 0 {
		return fmt.Errorf("%w: the algorithm protection attribute names no signature algorithm", ErrIntegrity)
	}
	var sigAlg pkix.AlgorithmIdentifier
	if rest, err := asn1.Unmarshal(derSequence(ap.Signature.Bytes), &sigAlg); err != nil || len(rest) > 0 {
		return malformed(ErrIntegrity, "algorithm protection: %v", err)
	}
	if !sameAlgorithm(ap.Digest, si.DigestAlgorithm) {
		return fmt.Errorf("%w: the algorithm protection attribute names digest %s, the signer %s",
			ErrIntegrity, ap.Digest.Algorithm, si.DigestAlgorithm.Algorithm)
	}
	if !sameAlgorithm(sigAlg, si.SignatureAlgorithm) {
		return fmt.Errorf("%w: the algorithm protection attribute names signature algorithm %s, the signer %s",
			ErrIntegrity, sigAlg.Algorithm, si.SignatureAlgorithm.Algorithm)
	}
	return nil
}

// sameAlgorithm compares two AlgorithmIdentifiers with their parameters,
// taking absent and NULL parameters as the same (products write either).
func sameAlgorithm(a, b pkix.AlgorithmIdentifier) bool {
	params := func(p asn1.RawValue) []byte {
		if len(p.FullBytes) == 0 || (p.Class == classUniversal && p.Tag == tagNull) {
			return nil
		}
		return p.FullBytes
	}
	return a.Algorithm.Equal(b.Algorithm) && bytes.Equal(params(a.Parameters), params(b.Parameters))
}

type pssChoice struct {
	hash DigestAlgorithm
	salt int
	// absent: the AlgorithmIdentifier carries no parameters at all, which
	// pyas2-lib writes for signatures it makes with SHA-256 and the longest
	// salt (see verifyPSSWithoutParameters).
	absent bool
}

func signatureScheme(alg pkix.AlgorithmIdentifier) (SignatureScheme, *pssChoice, error) {
	switch oid := alg.Algorithm; {
	case oid.Equal(oidRSAEncryption), oid.Equal(oidSHA1WithRSA), oid.Equal(oidSHA256WithRSA),
		oid.Equal(oidSHA384WithRSA), oid.Equal(oidSHA512WithRSA):
		return SchemePKCS1v15, nil, nil
	case oid.Equal(oidECPublicKey), oid.Equal(oidECDSASHA1), oid.Equal(oidECDSASHA256),
		oid.Equal(oidECDSASHA384), oid.Equal(oidECDSASHA512):
		return SchemeECDSA, nil, nil
	case oid.Equal(oidRSASSAPSS):
		if len(alg.Parameters.FullBytes) == 0 {
			return SchemePSS, &pssChoice{absent: true}, nil
		}
		var p pssParamsASN
		if rest, err := asn1.Unmarshal(alg.Parameters.FullBytes, &p); err != nil || len(rest) > 0 {
			return "", nil, malformed(ErrAuthentication, "RSA-PSS parameters: %v", err)
		}
		h := SHA1
		if len(p.Hash.Algorithm) > 0 {
			var err error
			if h, err = digestForOID(p.Hash.Algorithm); err != nil {
				return "", nil, err
			}
		}
		mgf := SHA1
		if len(p.MGF.Algorithm) > 0 {
			var mh pkix.AlgorithmIdentifier
			if !p.MGF.Algorithm.Equal(oidMGF1) {
				return "", nil, fmt.Errorf("%w: RSA-PSS mask generation %s", ErrUnsupportedAlgorithm, p.MGF.Algorithm)
			}
			if _, err := asn1.Unmarshal(p.MGF.Parameters.FullBytes, &mh); err != nil {
				return "", nil, malformed(ErrAuthentication, "MGF1 parameters: %v", err)
			}
			var err error
			if mgf, err = digestForOID(mh.Algorithm); err != nil {
				return "", nil, err
			}
		}
		if mgf != h || p.Trailer != 1 || p.SaltLength < 0 {
			return "", nil, fmt.Errorf("%w: RSA-PSS with MGF1-%s over %s, trailer %d", ErrUnsupportedAlgorithm, mgf, h, p.Trailer)
		}
		return SchemePSS, &pssChoice{hash: h, salt: p.SaltLength}, nil
	}
	return "", nil, fmt.Errorf("%w: signature algorithm %s", ErrUnsupportedAlgorithm, alg.Algorithm)
}

func x509SignatureAlgorithm(s SignatureScheme, d DigestAlgorithm) (x509.SignatureAlgorithm, error) {
	table := map[SignatureScheme]map[DigestAlgorithm]x509.SignatureAlgorithm{
		SchemePKCS1v15: {SHA1: x509.SHA1WithRSA, SHA256: x509.SHA256WithRSA, SHA384: x509.SHA384WithRSA, SHA512: x509.SHA512WithRSA},
		SchemeECDSA:    {SHA1: x509.ECDSAWithSHA1, SHA256: x509.ECDSAWithSHA256, SHA384: x509.ECDSAWithSHA384, SHA512: x509.ECDSAWithSHA512},
	}
	if a, ok := table[s][d]; ok {
		return a, nil
	}
	return 0, fmt.Errorf("%w: %s with %s", ErrUnsupportedAlgorithm, s, d)
}

// signerCertificate finds the certificate a SignerIdentifier names: one of
// the trusted ones, or an embedded one issued by a trusted one.
func signerCertificate(sid asn1.RawValue, trusted, embedded []*x509.Certificate, at time.Time) (*x509.Certificate, error) {
	for _, c := range trusted {
		if recipientMatches(sid, c) {
			return c, nil
		}
	}
	if len(trusted) > 0 {
		roots := x509.NewCertPool()
		for _, c := range trusted {
			roots.AddCert(c)
		}
		inter := x509.NewCertPool()
		for _, c := range embedded {
			inter.AddCert(c)
		}
		for _, c := range embedded {
			if !recipientMatches(sid, c) {
				continue
			}
			_, err := c.Verify(x509.VerifyOptions{
				Roots: roots, Intermediates: inter, CurrentTime: at,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
			})
			if err == nil {
				return c, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: the signer is not one of the %d partner certificate(s)", ErrAuthentication, len(trusted))
}
