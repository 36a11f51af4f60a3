package cms

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
)

// EncryptOptions chooses the algorithms of an outbound envelope.
type EncryptOptions struct {
	// Cipher defaults to AES256CBC. A GCM cipher makes an AuthEnvelopedData.
	// 3DES is refused: it is accepted inbound only.
	Cipher ContentCipher
	// KeyTransport defaults to RSAPKCS1v15.
	KeyTransport KeyTransport
	// SubjectKeyID names recipients by subjectKeyIdentifier instead of
	// issuer and serial number (for certificates that have one).
	SubjectKeyID bool
}

func (o EncryptOptions) withDefaults() (EncryptOptions, error) {
	if o.Cipher == "" {
		o.Cipher = AES256CBC
	}
	if o.KeyTransport == "" {
		o.KeyTransport = RSAPKCS1v15
	}
	if !o.Cipher.Outbound() {
		return o, fmt.Errorf("%w: %q is not used for outbound encryption", ErrUnsupportedAlgorithm, o.Cipher)
	}
	if _, err := ParseKeyTransport(string(o.KeyTransport)); err != nil {
		return o, err
	}
	return o, nil
}

// Encrypt builds a DER EnvelopedData (or AuthEnvelopedData for GCM)
// ContentInfo of content for the recipients.
func Encrypt(content []byte, recipients []*x509.Certificate, opts EncryptOptions) ([]byte, error) {
	size, err := EncryptedSize(int64(len(content)), recipients, opts)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(int(size))
	if err := EncryptTo(&out, bytes.NewReader(content), int64(len(content)), recipients, opts); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// GCM parameters as cipher.NewGCM uses them.
const (
	gcmNonceSize = 12
	gcmTagSize   = 16
)

// EncryptedSize is the length of what EncryptTo writes for size bytes of
// content, so that a caller can announce it (as an HTTP Content-Length)
// before encrypting. The recipients' encrypted keys are as long as their RSA
// moduli, so the length does not depend on the random key.
func EncryptedSize(size int64, recipients []*x509.Certificate, opts EncryptOptions) (int64, error) {
	opts, err := checkEncrypt(size, recipients, opts)
	if err != nil {
		return 0, err
	}
	riSet, version, err := recipientInfos(recipients, nil, opts)
	if err != nil {
		return 0, err
	}
	if opts.Cipher.AEAD() {
		tag := derOctets(make([]byte, gcmTagSize))
		head := aeadHead(riSet, opts.Cipher, make([]byte, gcmNonceSize), size, len(tag))
		return int64(len(head)) + size + int64(len(tag)), nil
	}
	bs := cbcBlockSize(opts.Cipher)
	ctLen := cbcLen(size, bs)
	return int64(len(cbcHead(riSet, version, opts.Cipher, make([]byte, bs), ctLen))) + ctLen, nil
}

// EncryptTo writes a DER EnvelopedData of exactly size bytes read from
// content to w; EncryptedSize tells its length. CBC content is encrypted as
// it is read; GCM content is read whole first, because the tag follows it.
func EncryptTo(w io.Writer, content io.Reader, size int64, recipients []*x509.Certificate, opts EncryptOptions) error {
	opts, err := checkEncrypt(size, recipients, opts)
	if err != nil {
		return err
	}
	cek := make([]byte, opts.Cipher.keyLen())
	if _, err := rand.Read(cek); err != nil {
		return err
	}
	riSet, version, err := recipientInfos(recipients, cek, opts)
	if err != nil {
		return err
	}
	block, err := newBlock(opts.Cipher, cek)
	if err != nil {
		return err
	}

	if opts.Cipher.AEAD() {
		nonce := make([]byte, gcmNonceSize)
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return err
		}
		// Sealed in place: the content is held once.
		plain := make([]byte, size, size+gcmTagSize)
		if _, err := io.ReadFull(content, plain); err != nil {
			return fmt.Errorf("encrypt: reading content: %w", err)
		}
		sealed := aead.Seal(plain[:0], nonce, plain, nil)
		ct, tag := sealed[:size], derOctets(sealed[size:])
		for _, b := range [][]byte{aeadHead(riSet, opts.Cipher, nonce, size, len(tag)), ct, tag} {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	}

	bs := block.BlockSize()
	iv := make([]byte, bs)
	if _, err := rand.Read(iv); err != nil {
		return err
	}
	if _, err := w.Write(cbcHead(riSet, version, opts.Cipher, iv, cbcLen(size, bs))); err != nil {
		return err
	}
	return cbcEncryptTo(w, io.LimitReader(content, size), size, block, iv)
}

func checkEncrypt(size int64, recipients []*x509.Certificate, opts EncryptOptions) (EncryptOptions, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return opts, err
	}
	if len(recipients) == 0 {
		return opts, errors.New("encrypt: no recipient certificate")
	}
	if size < 0 {
		return opts, errors.New("encrypt: negative content size")
	}
	return opts, nil
}

// recipientInfos builds the RecipientInfos SET and returns the EnvelopedData
// version it implies. A nil cek stands in zeros for the encrypted keys, for
// EncryptedSize.
func recipientInfos(recipients []*x509.Certificate, cek []byte, opts EncryptOptions) ([]byte, int, error) {
	version := 0
	var infos [][]byte
	for _, cert := range recipients {
		ri, v, err := keyTransRecipient(cert, cek, opts)
		if err != nil {
			return nil, 0, err
		}
		version = max(version, v)
		infos = append(infos, ri)
	}
	return derSet(infos...), version, nil
}

// cbcLen is the ciphertext length of size bytes with PKCS #7 padding.
func cbcLen(size int64, bs int) int64 { return (size/int64(bs) + 1) * int64(bs) }

func cbcBlockSize(c ContentCipher) int {
	block, err := newBlock(c, make([]byte, c.keyLen()))
	if err != nil {
		panic(err) // the options were checked: an outbound cipher takes a key of its length
	}
	return block.BlockSize()
}

// cbcHead is the EnvelopedData ContentInfo up to its ciphertext of ctLen
// bytes.
func cbcHead(riSet []byte, version int, c ContentCipher, iv []byte, ctLen int64) []byte {
	alg := derSequence(mustMarshal(c.oid()), derOctets(iv))
	return derHead(ctLen,
		headLevel{tag: tagSequence, constructed: true, before: mustMarshal(oidEnvelopedData)},
		headLevel{class: classContext, tag: 0, constructed: true},
		headLevel{tag: tagSequence, constructed: true, before: append(mustMarshal(version), riSet...)},
		headLevel{tag: tagSequence, constructed: true, before: append(mustMarshal(oidData), alg...)},
		headLevel{class: classContext, tag: 0},
	)
}

// aeadHead is the AuthEnvelopedData ContentInfo up to its ciphertext of
// size bytes; the tag, tagLen bytes of DER, follows the ciphertext.
func aeadHead(riSet []byte, c ContentCipher, nonce []byte, size int64, tagLen int) []byte {
	alg := derSequence(mustMarshal(c.oid()), derSequence(derOctets(nonce), mustMarshal(gcmTagSize)))
	return derHead(size,
		headLevel{tag: tagSequence, constructed: true, before: mustMarshal(oidAuthEnvelopedData)},
		headLevel{class: classContext, tag: 0, constructed: true},
		headLevel{tag: tagSequence, constructed: true, before: append(mustMarshal(0), riSet...), afterLen: tagLen},
		headLevel{tag: tagSequence, constructed: true, before: append(mustMarshal(oidData), alg...)},
		headLevel{class: classContext, tag: 0},
	)
}

// headLevel is one value that encloses a large content: its identifier, the
// fields before the enclosed value and the length of those after it.
type headLevel struct {
	class, tag  int
	constructed bool
	before      []byte
	afterLen    int
}

// derHead returns the DER before n bytes of content enclosed in levels,
// outermost first. The definite lengths follow from n alone, so the content
// can be written (or encrypted) where it lies instead of being copied into
// its encoding.
func derHead(n int64, levels ...headLevel) []byte {
	lens := make([]int, len(levels))
	inner := int(n)
	for i := len(levels) - 1; i >= 0; i-- {
		l := levels[i]
		lens[i] = len(l.before) + inner + l.afterLen
		inner = len(appendHeader(nil, l.class, l.tag, l.constructed, lens[i])) + lens[i]
	}
	var head []byte
	for i, l := range levels {
		head = appendHeader(head, l.class, l.tag, l.constructed, lens[i])
		head = append(head, l.before...)
	}
	return head
}

func cbcEncryptTo(w io.Writer, r io.Reader, size int64, block cipher.Block, iv []byte) error {
	bs := block.BlockSize()
	mode := cipher.NewCBCEncrypter(block, iv)
	buf := make([]byte, 64<<10+bs)
	var total int64
	for {
		n, err := io.ReadFull(r, buf[:64<<10])
		total += int64(n)
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return fmt.Errorf("encrypt: reading content: %w", err)
		}
		if eof {
			if total != size {
				return fmt.Errorf("encrypt: content is %d bytes, %d announced", total, size)
			}
			pad := bs - n%bs
			for i := range pad {
				buf[n+i] = byte(pad)
			}
			n += pad
		}
		mode.CryptBlocks(buf[:n], buf[:n])
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		if eof {
			return nil
		}
	}
}

// keyTransRecipient builds a KeyTransRecipientInfo and returns the
// EnvelopedData version it implies. A nil cek leaves the encrypted key zero,
// at its length (the modulus size).
func keyTransRecipient(cert *x509.Certificate, cek []byte, opts EncryptOptions) ([]byte, int, error) {
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, 0, fmt.Errorf("%w: recipient %q has no RSA key", ErrUnsupportedAlgorithm, cert.Subject.CommonName)
	}
	version := 0
	rid := derSequence(cert.RawIssuer, mustMarshal(cert.SerialNumber))
	if opts.SubjectKeyID && len(cert.SubjectKeyId) > 0 {
		version = 2
		rid = derTLV(classContext, 0, false, cert.SubjectKeyId)
	}
	var (
		alg []byte
		ek  []byte
		err error
	)
	switch opts.KeyTransport {
	case RSAPKCS1v15:
		alg = derSequence(mustMarshal(oidRSAEncryption), []byte{tagNull, 0})
		if cek != nil {
			ek, err = rsa.EncryptPKCS1v15(rand.Reader, pub, cek)
		}
	case RSAOAEPSHA1:
		// All parameters at their SHA-1 defaults: an empty SEQUENCE.
		alg = derSequence(mustMarshal(oidRSAESOAEP), derSequence())
		if cek != nil {
			ek, err = rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, cek, nil)
		}
	case RSAOAEPSHA256:
		sha256Alg := derSequence(mustMarshal(oidSHA256))
		params := derSequence(
			derExplicit(0, sha256Alg),
			derExplicit(1, derSequence(mustMarshal(oidMGF1), sha256Alg)),
		)
		alg = derSequence(mustMarshal(oidRSAESOAEP), params)
		if cek != nil {
			ek, err = rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, cek, nil)
		}
	}
	if cek == nil {
		ek = make([]byte, pub.Size())
	}
	if err != nil {
		return nil, 0, fmt.Errorf("encrypt: wrapping the content key: %w", err)
	}
	return derSequence(mustMarshal(version), rid, alg, derOctets(ek)), version, nil
}
