package cms

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
)

// Recipient is one of our decryption identities: a certificate and its
// private key. During a certificate rollover a caller passes both the old and
// the new one; the RecipientInfo naming either is used.
type Recipient struct {
	Certificate *x509.Certificate
	Key         crypto.Decrypter
}

// DecryptInfo describes how a message was encrypted.
type DecryptInfo struct {
	Cipher       ContentCipher
	KeyTransport KeyTransport
	// Recipient is the index of the candidate whose key opened the message.
	Recipient int
	// Tolerances says how a key transport that departs from the standard was
	// read, one note each (for example RSAES-OAEP without parameters); the
	// receiver records them on the message.
	Tolerances []string
}

// Decrypt opens an EnvelopedData or AuthEnvelopedData ContentInfo held in
// memory. See DecryptTo.
func Decrypt(data []byte, candidates []Recipient) ([]byte, *DecryptInfo, error) {
	return DecryptReader(bytes.NewReader(data), int64(len(data)), candidates)
}

// DecryptReader reads an EnvelopedData or AuthEnvelopedData ContentInfo (BER or
// DER) of size bytes from r and returns the plaintext. The plaintext is the
// one buffer it allocates, sized from size (the plaintext is never longer
// than its encoding): CBC content is decrypted into it while it is read, GCM
// ciphertext is read into it and opened in place. A size of zero or less
// means unknown; the buffer then grows as it fills.
func DecryptReader(r io.Reader, size int64, candidates []Recipient) ([]byte, *DecryptInfo, error) {
	env, info, err := openEnvelope(r, candidates)
	if err != nil {
		return nil, info, err
	}
	var buf []byte
	if size > 0 && size <= math.MaxInt {
		buf = make([]byte, 0, size)
	}
	if !env.authenticated {
		out := bytes.NewBuffer(buf)
		if err := env.decryptCBC(out); err != nil {
			return nil, info, err
		}
		return out.Bytes(), info, nil
	}
	plain, err := env.openGCM(buf)
	if err != nil {
		return nil, info, err
	}
	return plain, info, nil
}

// DecryptTo reads an EnvelopedData or AuthEnvelopedData ContentInfo (BER or
// DER) from r and writes the plaintext to w. CBC content is decrypted while
// it is read; when an error is returned after some plaintext was written,
// that plaintext must be discarded. GCM content is written only after its tag
// verified.
func DecryptTo(w io.Writer, r io.Reader, candidates []Recipient) (*DecryptInfo, error) {
	return DecryptToBounded(w, r, candidates, -1)
}

// MaxAEADContent bounds the AES-GCM (AuthEnvelopedData) content Wharf builds or opens:
// the standard library seals and opens GCM only over the whole content, which is
// therefore held in memory, so the sender and the receiver share this one bound.
const MaxAEADContent = 64 << 20

// DecryptToBounded is DecryptTo that refuses AES-GCM content of more than maxAEAD bytes
// with an *AEADSizeError before reading past them: GCM content is held whole until its
// tag verifies, CBC content streams whatever its size. A negative maxAEAD means no bound.
func DecryptToBounded(w io.Writer, r io.Reader, candidates []Recipient, maxAEAD int64) (*DecryptInfo, error) {
	env, info, err := openEnvelope(r, candidates)
	if err != nil {
		return info, err
	}
	if !env.authenticated {
		return info, env.decryptCBC(w)
	}
	if maxAEAD >= 0 {
		env.content = &aeadBound{r: env.content, left: maxAEAD, max: maxAEAD}
	}
	plain, err := env.openGCM(nil)
	if err != nil {
		return info, err
	}
	if _, err := w.Write(plain); err != nil {
		return info, err
	}
	return info, nil
}

// envelope is an EnvelopedData or AuthEnvelopedData whose content key was
// unwrapped, read up to its encrypted content.
type envelope struct {
	b             *berReader
	eci           berFrame // the EncryptedContentInfo
	authenticated bool
	cc            ContentCipher
	alg           pkix.AlgorithmIdentifier
	key           []byte
	content       io.Reader
}

// openEnvelope reads the ContentInfo up to the encrypted content and unwraps
// the content key with one of the candidates.
func openEnvelope(r io.Reader, candidates []Recipient) (*envelope, *DecryptInfo, error) {
	b := newBERReader(r)
	oid, err := openContentInfo(b)
	if err != nil {
		return nil, nil, malformed(ErrDecryption, "%v", err)
	}
	var authenticated bool
	switch {
	case oid.Equal(oidEnvelopedData):
	case oid.Equal(oidAuthEnvelopedData):
		authenticated = true
	default:
		return nil, nil, fmt.Errorf("%w: content type %s is not enveloped data", ErrDecryption, oid)
	}
	recipientInfos, err := readEnvelopeHead(b)
	if err != nil {
		return nil, nil, malformed(ErrDecryption, "%v", err)
	}

	// EncryptedContentInfo: contentType, contentEncryptionAlgorithm, [0] content.
	h, err := expect(b, classUniversal, tagSequence, true)
	if err != nil {
		return nil, nil, malformed(ErrDecryption, "encrypted content info: %v", err)
	}
	eci := b.enter(h)
	if _, err := readOID(b); err != nil {
		return nil, nil, malformed(ErrDecryption, "encrypted content type: %v", err)
	}
	_, algDER, err := b.readElement(1024)
	if err != nil {
		return nil, nil, malformed(ErrDecryption, "content encryption algorithm: %v", err)
	}
	var alg pkix.AlgorithmIdentifier
	if rest, err := asn1.Unmarshal(algDER, &alg); err != nil || len(rest) > 0 {
		return nil, nil, malformed(ErrDecryption, "content encryption algorithm: %v", err)
	}
	cc, err := cipherForOID(alg.Algorithm)
	if err != nil {
		return nil, nil, err
	}
	if cc.AEAD() != authenticated {
		return nil, nil, fmt.Errorf("%w: %s in the wrong envelope type", ErrUnsupportedAlgorithm, cc)
	}
	info := &DecryptInfo{Cipher: cc, Recipient: -1}

	key, kt, idx, note, err := unwrapContentKey(recipientInfos, candidates, cc.keyLen())
	if err != nil {
		return nil, info, err
	}
	info.KeyTransport, info.Recipient = kt, idx
	if note != "" {
		info.Tolerances = append(info.Tolerances, note)
	}

	ok, err := b.more(eci)
	if err != nil {
		return nil, info, malformed(ErrDecryption, "%v", err)
	}
	if !ok {
		return nil, info, fmt.Errorf("%w: the encrypted content is detached", ErrDecryption)
	}
	h, err = b.readHeader()
	if err != nil || !h.is(classContext, 0) {
		return nil, info, malformed(ErrDecryption, "encrypted content: %v", err)
	}
	return &envelope{b: b, eci: eci, authenticated: authenticated, cc: cc, alg: alg, key: key,
		content: newOctetReader(b, h)}, info, nil
}

// decryptCBC writes the plaintext of CBC content to w as it is read.
func (e *envelope) decryptCBC(w io.Writer) error {
	block, iv, err := cbcParams(e.cc, e.key, e.alg)
	if err != nil {
		return err
	}
	return cbcDecryptTo(w, e.content, block, iv)
}

// openGCM reads the GCM ciphertext into buf, then the tag, and opens the
// ciphertext in place: the plaintext is returned in buf's storage (grown
// when buf was too small).
func (e *envelope) openGCM(buf []byte) ([]byte, error) {
	b := e.b
	ciphertext, err := readAllInto(buf, e.content)
	var tooLarge *AEADSizeError
	if errors.As(err, &tooLarge) {
		return nil, tooLarge
	}
	if err != nil {
		return nil, malformed(ErrDecryption, "encrypted content: %v", err)
	}
	if err := b.close(e.eci); err != nil {
		return nil, malformed(ErrDecryption, "%v", err)
	}
	// authAttrs [1] (optional), then mac OCTET STRING.
	var aad []byte
	h, der, err := b.readElement(maxHeaderElement)
	if err != nil {
		return nil, malformed(ErrDecryption, "after the encrypted content: %v", err)
	}
	if h.is(classContext, 1) {
		// The tag is authenticated as a universal SET (RFC 5083, 2.2).
		_, body, _ := splitDER(der)
		aad = derSet(body)
		h, der, err = b.readElement(1024)
		if err != nil {
			return nil, malformed(ErrDecryption, "mac: %v", err)
		}
	}
	if !h.is(classUniversal, tagOctetString) {
		return nil, malformed(ErrDecryption, "mac missing")
	}
	_, mac, _ := splitDER(der)
	return gcmOpen(e.key, e.alg, ciphertext, mac, aad)
}

// readAllInto is io.ReadAll appending to buf, so a caller that knows the size
// reads without the buffer growing.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, 512)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// readEnvelopeHead reads the EnvelopedData or AuthEnvelopedData SEQUENCE
// header, its version, the optional originatorInfo and the recipientInfos,
// leaving b at the EncryptedContentInfo.
func readEnvelopeHead(b *berReader) ([][]byte, error) {
	if _, err := expect(b, classUniversal, tagSequence, true); err != nil {
		return nil, err
	}
	if _, err := readInt(b); err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	h, der, err := b.readElement(maxHeaderElement)
	if err != nil {
		return nil, fmt.Errorf("recipient infos: %w", err)
	}
	if h.is(classContext, 0) { // originatorInfo: certificates we do not need
		h, der, err = b.readElement(maxHeaderElement)
		if err != nil {
			return nil, fmt.Errorf("recipient infos: %w", err)
		}
	}
	if !h.is(classUniversal, tagSet) {
		return nil, errors.New("recipient infos missing")
	}
	var set asn1.RawValue
	if _, err := asn1.Unmarshal(der, &set); err != nil {
		return nil, fmt.Errorf("recipient infos: %w", err)
	}
	var infos [][]byte
	for rest := set.Bytes; len(rest) > 0; {
		var ri asn1.RawValue
		var err error
		rest, err = asn1.Unmarshal(rest, &ri)
		if err != nil {
			return nil, fmt.Errorf("recipient info: %w", err)
		}
		infos = append(infos, ri.FullBytes)
	}
	return infos, nil
}

type issuerAndSerial struct {
	Issuer asn1.RawValue
	Serial *big.Int
}

type keyTransRecipientInfo struct {
	Version                int
	RID                    asn1.RawValue
	KeyEncryptionAlgorithm pkix.AlgorithmIdentifier
	EncryptedKey           []byte
}

// unwrapContentKey finds the RecipientInfo that names one of the candidates
// and decrypts the content-encryption key with that candidate's key. The
// note says how a key transport outside the standard was read.
func unwrapContentKey(infos [][]byte, candidates []Recipient, keyLen int) ([]byte, KeyTransport, int, string, error) {
	var ktris []keyTransRecipientInfo
	for _, raw := range infos {
		if raw[0] != 0x30 { // only KeyTransRecipientInfo is a bare SEQUENCE
			continue
		}
		var k keyTransRecipientInfo
		if rest, err := asn1.Unmarshal(raw, &k); err != nil || len(rest) > 0 {
			return nil, "", -1, "", malformed(ErrDecryption, "key transport recipient info: %v", err)
		}
		ktris = append(ktris, k)
	}
	var lastErr error
	for i, c := range candidates {
		if c.Certificate == nil || c.Key == nil {
			continue
		}
		for _, k := range ktris {
			if !recipientMatches(k.RID, c.Certificate) {
				continue
			}
			key, kt, note, err := decryptKey(k, c.Key, keyLen)
			if err != nil {
				lastErr = err
				continue
			}
			return key, kt, i, note, nil
		}
	}
	if lastErr != nil {
		return nil, "", -1, "", lastErr
	}
	return nil, "", -1, "", fmt.Errorf("%w: no recipient info names one of our %d certificate(s)", ErrDecryption, len(candidates))
}

// recipientMatches compares a RecipientIdentifier with a certificate.
func recipientMatches(rid asn1.RawValue, cert *x509.Certificate) bool {
	switch {
	case rid.Class == classContext && rid.Tag == 0: // subjectKeyIdentifier
		return len(cert.SubjectKeyId) > 0 && bytes.Equal(rid.Bytes, cert.SubjectKeyId)
	case rid.Class == classUniversal && rid.Tag == tagSequence:
		var ias issuerAndSerial
		if _, err := asn1.Unmarshal(rid.FullBytes, &ias); err != nil || ias.Serial == nil {
			return false
		}
		return ias.Serial.Cmp(cert.SerialNumber) == 0 && sameName(ias.Issuer.FullBytes, cert.RawIssuer)
	}
	return false
}

// sameName compares two encoded names, first byte for byte and then by
// their parsed form, since some products re-encode string types.
func sameName(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ra, rb pkix.RDNSequence
	if _, err := asn1.Unmarshal(a, &ra); err != nil {
		return false
	}
	if _, err := asn1.Unmarshal(b, &rb); err != nil {
		return false
	}
	return ra.String() == rb.String()
}

type oaepParams struct {
	Hash    pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:0"`
	MGF     pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:1"`
	PSource pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:2"`
}

func decryptKey(k keyTransRecipientInfo, key crypto.Decrypter, keyLen int) ([]byte, KeyTransport, string, error) {
	alg := k.KeyEncryptionAlgorithm
	if _, ok := key.Public().(*rsa.PublicKey); !ok {
		return nil, "", "", fmt.Errorf("%w: key transport needs an RSA key", ErrUnsupportedAlgorithm)
	}
	switch {
	case alg.Algorithm.Equal(oidRSAEncryption):
		// A wrong key or bad padding yields a random key of the right length
		// instead of an error, so the failure shows up as undecryptable
		// content and the padding check leaks nothing.
		cek, err := key.Decrypt(rand.Reader, k.EncryptedKey, &rsa.PKCS1v15DecryptOptions{SessionKeyLen: keyLen})
		if err != nil {
			return nil, "", "", fmt.Errorf("%w: %w", ErrDecryption, err)
		}
		return cek, RSAPKCS1v15, "", nil
	case alg.Algorithm.Equal(oidRSAESOAEP):
		h, mgf, label, kt, err := parseOAEPParams(alg.Parameters)
		if err != nil {
			return nil, "", "", err
		}
		cek, err := key.Decrypt(rand.Reader, k.EncryptedKey, &rsa.OAEPOptions{Hash: h, MGFHash: mgf, Label: label})
		if err != nil {
			return nil, "", "", fmt.Errorf("%w: %w", ErrDecryption, err)
		}
		if len(cek) != keyLen {
			return nil, "", "", fmt.Errorf("%w: content key of %d bytes, want %d", ErrDecryption, len(cek), keyLen)
		}
		return cek, kt, oaepNote(alg.Parameters), nil
	}
	return nil, "", "", fmt.Errorf("%w: key transport %s", ErrUnsupportedAlgorithm, alg.Algorithm)
}

// oaepNote says how RSAES-OAEP parameters that RFC 4055 requires but the
// sender left out were read: pyas2-lib writes none and means the defaults.
func oaepNote(raw asn1.RawValue) string {
	switch {
	case len(raw.FullBytes) == 0:
		return "RSAES-OAEP parameters absent: decrypted with the RFC 4055 defaults (SHA-1, MGF1 with SHA-1)"
	case raw.Class == classUniversal && raw.Tag == tagNull:
		return "RSAES-OAEP parameters NULL: decrypted with the RFC 4055 defaults (SHA-1, MGF1 with SHA-1)"
	}
	return ""
}

// parseOAEPParams reads RSAES-OAEP-params; absent fields take the SHA-1
// defaults of RFC 8017, and so do parameters absent altogether or NULL (see
// oaepNote).
func parseOAEPParams(raw asn1.RawValue) (crypto.Hash, crypto.Hash, []byte, KeyTransport, error) {
	var p oaepParams
	if len(raw.FullBytes) > 0 && !(raw.Tag == tagNull && raw.Class == classUniversal) {
		if rest, err := asn1.Unmarshal(raw.FullBytes, &p); err != nil || len(rest) > 0 {
			return 0, 0, nil, "", malformed(ErrDecryption, "RSAES-OAEP parameters: %v", err)
		}
	}
	hashOf := func(oid asn1.ObjectIdentifier) (DigestAlgorithm, error) {
		if len(oid) == 0 {
			return SHA1, nil
		}
		d, err := digestForOID(oid)
		if err != nil || (d != SHA1 && d != SHA256) {
			return "", fmt.Errorf("%w: RSA-OAEP with digest %s", ErrUnsupportedAlgorithm, oid)
		}
		return d, nil
	}
	h, err := hashOf(p.Hash.Algorithm)
	if err != nil {
		return 0, 0, nil, "", err
	}
	mgf := SHA1
	if len(p.MGF.Algorithm) > 0 {
		if !p.MGF.Algorithm.Equal(oidMGF1) {
			return 0, 0, nil, "", fmt.Errorf("%w: RSA-OAEP mask generation %s", ErrUnsupportedAlgorithm, p.MGF.Algorithm)
		}
		var mh pkix.AlgorithmIdentifier
		if _, err := asn1.Unmarshal(p.MGF.Parameters.FullBytes, &mh); err != nil {
			return 0, 0, nil, "", malformed(ErrDecryption, "MGF1 parameters: %v", err)
		}
		if mgf, err = hashOf(mh.Algorithm); err != nil {
			return 0, 0, nil, "", err
		}
	}
	var label []byte
	if len(p.PSource.Algorithm) > 0 {
		if !p.PSource.Algorithm.Equal(oidPSpecified) {
			return 0, 0, nil, "", fmt.Errorf("%w: RSA-OAEP label source %s", ErrUnsupportedAlgorithm, p.PSource.Algorithm)
		}
		if _, err := asn1.Unmarshal(p.PSource.Parameters.FullBytes, &label); err != nil {
			return 0, 0, nil, "", malformed(ErrDecryption, "RSA-OAEP label: %v", err)
		}
	}
	kt := RSAOAEPSHA1
	if h == SHA256 {
		kt = RSAOAEPSHA256
	}
	return h.Hash(), mgf.Hash(), label, kt, nil
}

func newBlock(cc ContentCipher, key []byte) (cipher.Block, error) {
	if len(key) != cc.keyLen() {
		return nil, fmt.Errorf("%w: content key of %d bytes for %s", ErrDecryption, len(key), cc)
	}
	var (
		block cipher.Block
		err   error
	)
	if cc == DES3CBC {
		block, err = des.NewTripleDESCipher(key)
	} else {
		block, err = aes.NewCipher(key)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecryption, err)
	}
	return block, nil
}

func cbcParams(cc ContentCipher, key []byte, alg pkix.AlgorithmIdentifier) (cipher.Block, []byte, error) {
	block, err := newBlock(cc, key)
	if err != nil {
		return nil, nil, err
	}
	var iv []byte
	if rest, err := asn1.Unmarshal(alg.Parameters.FullBytes, &iv); err != nil || len(rest) > 0 {
		return nil, nil, malformed(ErrDecryption, "%s IV: %v", cc, err)
	}
	if len(iv) != block.BlockSize() {
		return nil, nil, malformed(ErrDecryption, "%s IV of %d bytes", cc, len(iv))
	}
	return block, iv, nil
}

// cbcDecryptTo decrypts r to w, holding back the last block until the end
// so its padding can be removed.
func cbcDecryptTo(w io.Writer, r io.Reader, block cipher.Block, iv []byte) error {
	bs := block.BlockSize()
	mode := cipher.NewCBCDecrypter(block, iv)
	buf := make([]byte, 64<<10) // a multiple of both block sizes
	last := make([]byte, 0, bs)
	for {
		n, err := io.ReadFull(r, buf)
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return malformed(ErrDecryption, "encrypted content: %v", err)
		}
		if n%bs != 0 {
			return fmt.Errorf("%w: ciphertext is not a whole number of blocks", ErrDecryption)
		}
		if n > 0 {
			mode.CryptBlocks(buf[:n], buf[:n])
			if len(last) > 0 {
				if _, err := w.Write(last); err != nil {
					return err
				}
			}
			if _, err := w.Write(buf[:n-bs]); err != nil {
				return err
			}
			last = append(last[:0], buf[n-bs:n]...)
		}
		if eof {
			break
		}
	}
	if len(last) == 0 {
		return fmt.Errorf("%w: empty ciphertext", ErrDecryption)
	}
	pad := int(last[bs-1])
	good := subtle.ConstantTimeLessOrEq(1, pad) & subtle.ConstantTimeLessOrEq(pad, bs)
	for i := range bs {
		inPad := subtle.ConstantTimeLessOrEq(bs-pad, i)
		good &= subtle.ConstantTimeByteEq(last[i], byte(pad)) | (inPad ^ 1)
	}
	if good != 1 {
		return fmt.Errorf("%w: bad padding (wrong key or damaged content)", ErrDecryption)
	}
	_, err := w.Write(last[:bs-pad])
	return err
}

type gcmParameters struct {
	Nonce  []byte
	ICVLen int `asn1:"default:12"`
}

func gcmOpen(key []byte, alg pkix.AlgorithmIdentifier, ciphertext, mac, aad []byte) ([]byte, error) {
	var p gcmParameters
	if rest, err := asn1.Unmarshal(alg.Parameters.FullBytes, &p); err != nil || len(rest) > 0 {
		return nil, malformed(ErrDecryption, "GCM parameters: %v", err)
	}
	aead, err := newGCM(key, len(p.Nonce), p.ICVLen)
	if err != nil {
		return nil, err
	}
	if len(mac) != p.ICVLen {
		return nil, malformed(ErrDecryption, "GCM tag of %d bytes, parameters say %d", len(mac), p.ICVLen)
	}
	// Opened in place: the tag is appended to the ciphertext (within its
	// capacity when the caller sized it) and the plaintext overwrites both.
	sealed := append(ciphertext, mac...)
	plain, err := aead.Open(sealed[:0], p.Nonce, sealed, aad)
	if err != nil {
		return nil, fmt.Errorf("%w: GCM tag does not match (wrong key or altered content)", ErrDecryption)
	}
	return plain, nil
}

func newGCM(key []byte, nonceLen, tagLen int) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecryption, err)
	}
	switch {
	case nonceLen == 12 && tagLen >= 12 && tagLen <= 16:
		return cipher.NewGCMWithTagSize(block, tagLen)
	case nonceLen > 0 && tagLen == 16:
		return cipher.NewGCMWithNonceSize(block, nonceLen)
	}
	return nil, fmt.Errorf("%w: GCM with a %d-byte nonce and a %d-byte tag", ErrUnsupportedAlgorithm, nonceLen, tagLen)
}

// aeadBound reads GCM content up to a bound and fails with an *AEADSizeError past it.
type aeadBound struct {
	r    io.Reader
	left int64
	max  int64
}

func (b *aeadBound) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &AEADSizeError{Limit: b.max}
	}
	n, err := b.r.Read(p[:min(int64(len(p)), b.left+1)])
	b.left -= int64(n)
	if b.left < 0 {
		return 0, &AEADSizeError{Limit: b.max}
	}
	return n, err
}
