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
	var out bytes.Buffer
	out.Grow(len(content) + 1024)
	if err := EncryptTo(&out, bytes.NewReader(content), int64(len(content)), recipients, opts); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// EncryptTo writes a DER EnvelopedData of exactly size bytes read from
// content to w. CBC content is encrypted as it is read; GCM content is read
// whole first.
func EncryptTo(w io.Writer, content io.Reader, size int64, recipients []*x509.Certificate, opts EncryptOptions) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if len(recipients) == 0 {
		return errors.New("encrypt: no recipient certificate")
	}
	if size < 0 {
		return errors.New("encrypt: negative content size")
	}
	cek := make([]byte, opts.Cipher.keyLen())
	if _, err := rand.Read(cek); err != nil {
		return err
	}
	version := 0
	var infos [][]byte
	for _, cert := range recipients {
		ri, v, err := keyTransRecipient(cert, cek, opts)
		if err != nil {
			return err
		}
		version = max(version, v)
		infos = append(infos, ri)
	}
	riSet := derSet(infos...)
	block, err := newBlock(opts.Cipher, cek)
	if err != nil {
		return err
	}

	if opts.Cipher.AEAD() {
		plain := make([]byte, size)
		if _, err := io.ReadFull(content, plain); err != nil {
			return fmt.Errorf("encrypt: reading content: %w", err)
		}
		nonce := make([]byte, 12)
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return err
		}
		sealed := aead.Seal(nil, nonce, plain, nil)
		ct, tag := sealed[:len(sealed)-aead.Overhead()], sealed[len(sealed)-aead.Overhead():]
		alg := derSequence(mustMarshal(opts.Cipher.oid()),
			derSequence(derOctets(nonce), mustMarshal(aead.Overhead())))
		eci := derSequence(mustMarshal(oidData), alg, derTLV(classContext, 0, false, ct))
		env := derSequence(mustMarshal(0), riSet, eci, derOctets(tag))
		_, err = w.Write(contentInfo(oidAuthEnvelopedData, env))
		return err
	}

	bs := int64(block.BlockSize())
	iv := make([]byte, bs)
	if _, err := rand.Read(iv); err != nil {
		return err
	}
	ctLen := (size/bs + 1) * bs
	alg := derSequence(mustMarshal(opts.Cipher.oid()), derOctets(iv))
	ctHeader := appendHeader(nil, classContext, 0, false, int(ctLen))
	eciPrefix := append(mustMarshal(oidData), alg...)
	eciPrefix = append(eciPrefix, ctHeader...)
	eciLen := len(eciPrefix) + int(ctLen)
	envPrefix := append(mustMarshal(version), riSet...)
	envPrefix = appendHeader(envPrefix, classUniversal, tagSequence, true, eciLen)
	envLen := len(envPrefix) + len(eciPrefix) + int(ctLen)
	oid := mustMarshal(oidEnvelopedData)
	explicitHdr := appendHeader(nil, classContext, 0, true, envLen+headerLen(envLen))
	ciLen := len(oid) + len(explicitHdr) + envLen + headerLen(envLen)

	var head []byte
	head = appendHeader(head, classUniversal, tagSequence, true, ciLen)
	head = append(head, oid...)
	head = append(head, explicitHdr...)
	head = appendHeader(head, classUniversal, tagSequence, true, envLen)
	head = append(head, envPrefix...)
	head = append(head, eciPrefix...)
	if _, err := w.Write(head); err != nil {
		return err
	}
	return cbcEncryptTo(w, io.LimitReader(content, size), size, block, iv)
}

// headerLen is the size of a SEQUENCE header for n content bytes.
func headerLen(n int) int { return len(appendHeader(nil, classUniversal, tagSequence, true, n)) }

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
// EnvelopedData version it implies.
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
		ek, err = rsa.EncryptPKCS1v15(rand.Reader, pub, cek)
	case RSAOAEPSHA1:
		// All parameters at their SHA-1 defaults: an empty SEQUENCE.
		alg = derSequence(mustMarshal(oidRSAESOAEP), derSequence())
		ek, err = rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, cek, nil)
	case RSAOAEPSHA256:
		sha256Alg := derSequence(mustMarshal(oidSHA256))
		params := derSequence(
			derExplicit(0, sha256Alg),
			derExplicit(1, derSequence(mustMarshal(oidMGF1), sha256Alg)),
		)
		alg = derSequence(mustMarshal(oidRSAESOAEP), params)
		ek, err = rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, cek, nil)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("encrypt: wrapping the content key: %w", err)
	}
	return derSequence(mustMarshal(version), rid, alg, derOctets(ek)), version, nil
}
