// Package certs imports X.509 certificates and their private keys (PEM, DER, PKCS#12),
// turns them into persistence records with the key sealed under the master key, opens a
// stored key where it is used, and watches for certificates that expire.
package certs

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"

	"software.sslmate.com/src/go-pkcs12"
)

// Errors of Parse, each wrapped with what exactly was wrong.
var (
	// ErrWrongPassword means a PKCS#12 file did not open with the password given.
	ErrWrongPassword = errors.New("wrong PKCS#12 password")
	// ErrNoCertificate means the upload holds no certificate.
	ErrNoCertificate = errors.New("no certificate found")
	// ErrKeyMismatch means the private key belongs to none of the certificates.
	ErrKeyMismatch = errors.New("the private key matches none of the certificates")
	// ErrUnrecognized means the upload is not PEM, DER or PKCS#12, or is damaged.
	ErrUnrecognized = errors.New("not a certificate in PEM, DER or PKCS#12 format")
)

// MaxCertificates bounds the certificates of one upload.
const MaxCertificates = 64

// Parsed is one certificate of an upload, with its private key when the upload carried
// the key that matches it.
type Parsed struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Parse reads an upload: PEM (one or more CERTIFICATE blocks and at most one private key
// in PKCS#1, PKCS#8 or SEC 1 form), a DER certificate, or PKCS#12 opened with password
// (its key, certificate and chain). The certificates come back in the order of the
// upload, each once; the key, if any, is attached to the certificate it matches. Every
// error wraps one of the package's errors and says what was wrong, never the password.
func Parse(data []byte, password string) ([]Parsed, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("the file is empty: %w", ErrNoCertificate)
	}
	var (
		certs []*x509.Certificate
		key   crypto.Signer
		err   error
	)
	switch {
	case bytes.Contains(data, []byte("-----BEGIN ")):
		certs, key, err = parsePEM(data)
	case isPFX(data):
		certs, key, err = parsePKCS12(data, password)
	default:
		var c *x509.Certificate
		if c, err = x509.ParseCertificate(data); err != nil {
			return nil, fmt.Errorf("%w (as DER: %v)", ErrUnrecognized, err)
		}
		certs = []*x509.Certificate{c}
	}
	if err != nil {
		return nil, err
	}
	return assemble(certs, key)
}

// Fingerprint is the SHA-256 of a certificate's DER encoding in lower-case hex.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// assemble removes repeated certificates and attaches the key to its certificate.
func assemble(certs []*x509.Certificate, key crypto.Signer) ([]Parsed, error) {
	if len(certs) == 0 {
		return nil, ErrNoCertificate
	}
	seen := map[string]bool{}
	var out []Parsed
	for _, c := range certs {
		fp := Fingerprint(c.Raw)
		if seen[fp] {
			continue
		}
		seen[fp] = true
		out = append(out, Parsed{Cert: c})
	}
	if len(out) > MaxCertificates {
		return nil, fmt.Errorf("%d certificates in one upload, at most %d are taken: %w", len(out), MaxCertificates, ErrUnrecognized)
	}
	if key == nil {
		return out, nil
	}
	matched := false
	for i := range out {
		if KeyMatches(out[i].Cert, key) {
			out[i].Key = key
			matched = true
		}
	}
	if !matched {
		return nil, ErrKeyMismatch
	}
	return out, nil
}

// KeyMatches reports whether key is the private key of cert.
func KeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(key.Public())
}

func parsePEM(data []byte) ([]*x509.Certificate, crypto.Signer, error) {
	var (
		certs []*x509.Certificate
		key   crypto.Signer
		n     int
	)
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		n++
		switch b.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("PEM block %d: %w (%v)", n, ErrUnrecognized, err)
			}
			certs = append(certs, c)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if key != nil {
				return nil, nil, fmt.Errorf("PEM block %d: a second private key; upload one key with its certificates: %w", n, ErrUnrecognized)
			}
			if _, encrypted := b.Headers["DEK-Info"]; encrypted {
				return nil, nil, fmt.Errorf("PEM block %d: the private key is encrypted; upload it as PKCS#12 with its password: %w", n, ErrUnrecognized)
			}
			k, err := parseKey(b.Type, b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("PEM block %d: %w", n, err)
			}
			key = k
		case "ENCRYPTED PRIVATE KEY":
			return nil, nil, fmt.Errorf("PEM block %d: the private key is encrypted; upload it as PKCS#12 with its password: %w", n, ErrUnrecognized)
		case "EC PARAMETERS":
			// openssl writes the curve before an EC key; the key names its curve too.
		default:
			return nil, nil, fmt.Errorf("PEM block %d: type %q is not a certificate or private key: %w", n, b.Type, ErrUnrecognized)
		}
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("%w (no complete PEM block)", ErrUnrecognized)
	}
	if len(certs) == 0 {
		return nil, nil, fmt.Errorf("no CERTIFICATE block in the PEM file: %w", ErrNoCertificate)
	}
	return certs, key, nil
}

// parseKey reads a private key in the form its PEM type names.
func parseKey(typ string, der []byte) (crypto.Signer, error) {
	var (
		k   any
		err error
	)
	switch typ {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(der)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(der)
	default:
		k, err = x509.ParsePKCS8PrivateKey(der)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s is damaged (%v)", ErrUnrecognized, typ, err)
	}
	return asSigner(k)
}

func asSigner(k any) (crypto.Signer, error) {
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: private key of type %T is not supported", ErrUnrecognized, k)
	}
	return s, nil
}

// isPFX reports whether data is shaped like PKCS#12: a DER SEQUENCE starting with
// version 3 and a content info, where a certificate starts with a SEQUENCE instead.
func isPFX(data []byte) bool {
	var pfx struct {
		Version  int
		AuthSafe asn1.RawValue
		MacData  asn1.RawValue `asn1:"optional"`
	}
	rest, err := asn1.Unmarshal(data, &pfx)
	return err == nil && len(rest) == 0 && pfx.Version == 3
}

func parsePKCS12(data []byte, password string) ([]*x509.Certificate, crypto.Signer, error) {
	k, leaf, chain, err := pkcs12.DecodeChain(data, password)
	switch {
	case errors.Is(err, pkcs12.ErrIncorrectPassword), errors.Is(err, pkcs12.ErrDecryption):
		return nil, nil, ErrWrongPassword
	case err != nil && err.Error() == "pkcs12: private key missing":
		return nil, nil, fmt.Errorf("the PKCS#12 file holds no private key; upload certificates alone as PEM or DER: %w", ErrUnrecognized)
	case err != nil && err.Error() == "pkcs12: certificate missing":
		return nil, nil, fmt.Errorf("the PKCS#12 file holds no certificate: %w", ErrNoCertificate)
	case err != nil:
		return nil, nil, fmt.Errorf("%w: PKCS#12: %v", ErrUnrecognized, err)
	}
	key, err := asSigner(k)
	if err != nil {
		return nil, nil, err
	}
	return append([]*x509.Certificate{leaf}, chain...), key, nil
}
