package certs

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"wharf/internal/persistence"
)

// MaxUploadSize bounds an uploaded certificate file; real certificate files and PKCS#12
// bundles are a few kilobytes. The REST API and the web UI both apply it.
const MaxUploadSize = 1 << 20

// OwnAsPartner is the refusal of one of our key-holding certificates where a partner's
// certificate is expected: the partner keeps its own key, so a certificate with our key
// in that place is always a mix-up.
const OwnAsPartner = "This is one of our own certificates with its private key; a partner's certificate comes from the partner."

// Creator stores imported certificates.
type Creator interface {
	CreateCertificates(ctx context.Context, certs []persistence.Certificate) ([]persistence.Certificate, error)
}

// Lister lists stored certificates. A store that also lists them (the SQL store does)
// lets an upload find the stored private key of a certificate a CA issued for it.
type Lister interface {
	ListCertificates(ctx context.Context, opt persistence.ListOptions) ([]persistence.Certificate, int, error)
}

// maxListed is how many stored certificates an upload compares keys with; installations
// hold dozens.
const maxListed = 1000

// Upload is a certificate upload: one file (PEM, DER or PKCS#12), optionally the
// private key in a file of its own.
type Upload struct {
	File        []byte
	Key         []byte
	Password    string
	Description string
	// Partner says the upload is a partner's certificate: one with our private key is
	// refused (OwnAsPartner).
	Partner bool
}

// Import stores every certificate of an uploaded file (PEM, DER or PKCS#12 opened with
// password) and its private key sealed; see ImportUpload.
func Import(ctx context.Context, st Creator, sealer Sealer, file []byte, password, description string) ([]persistence.Certificate, error) {
	return ImportUpload(ctx, st, sealer, Upload{File: file, Password: password, Description: description})
}

// ImportUpload stores every certificate of an upload, its private key sealed. A
// certificate without a key in the upload whose public key is that of a stored
// certificate with a key (the CA's answer to our certificate request) is stored with
// that key. A refusal is a *persistence.FieldError naming "file", "key" or "password"
// (when the PKCS#12 password is wrong); a certificate already stored is the store's
// persistence.ErrConflict. The password is used to open the file only and appears in no
// error.
func ImportUpload(ctx context.Context, st Creator, sealer Sealer, u Upload) ([]persistence.Certificate, error) {
	parsed, err := Parse(u.File, u.Password)
	if err != nil {
		field := "file"
		if errors.Is(err, ErrWrongPassword) {
			field = "password"
		}
		return nil, &persistence.FieldError{Field: field, Message: err.Error()}
	}
	if len(u.Key) > 0 {
		if parsed, err = attachKeyFile(parsed, u.Key); err != nil {
			return nil, err
		}
	}
	if u.Partner && hasKey(parsed) {
		return nil, &persistence.FieldError{Field: "file", Message: OwnAsPartner}
	}
	recs, err := Records(parsed, u.Description, sealer)
	if err != nil {
		return nil, err
	}
	if l, ok := st.(Lister); ok {
		if err := joinStoredKeys(ctx, l, parsed, recs, u.Partner); err != nil {
			return nil, err
		}
	}
	stored, err := st.CreateCertificates(ctx, recs)
	if err != nil {
		return nil, fmt.Errorf("store certificates: %w", err)
	}
	return stored, nil
}

func hasKey(parsed []Parsed) bool {
	for _, p := range parsed {
		if p.Key != nil {
			return true
		}
	}
	return false
}

// attachKeyFile attaches the key of a separate key file to the certificates it matches.
func attachKeyFile(parsed []Parsed, keyFile []byte) ([]Parsed, error) {
	if hasKey(parsed) {
		return nil, &persistence.FieldError{Field: "key", Message: "The certificate file already holds a private key; leave the key file out."}
	}
	key, err := ParseKey(keyFile)
	if err != nil {
		return nil, &persistence.FieldError{Field: "key", Message: err.Error()}
	}
	matched := false
	for i := range parsed {
		if KeyMatches(parsed[i].Cert, key) {
			parsed[i].Key, matched = key, true
		}
	}
	if !matched {
		return nil, &persistence.FieldError{Field: "key", Message: "The private key does not belong to the certificate: " + ErrKeyMismatch.Error() + "."}
	}
	return parsed, nil
}

// ParseKey reads a private key file: PEM (PKCS#8, PKCS#1 or SEC 1) or the same in DER.
func ParseKey(data []byte) (crypto.Signer, error) {
	if bytes.Contains(data, []byte("-----BEGIN ")) {
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				return nil, fmt.Errorf("%w: no PRIVATE KEY block in the key file", ErrUnrecognized)
			}
			switch b.Type {
			case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
				if _, encrypted := b.Headers["DEK-Info"]; encrypted {
					return nil, fmt.Errorf("%w: the private key is encrypted; upload it as PKCS#12 with its password", ErrUnrecognized)
				}
				return parseKey(b.Type, b.Bytes)
			case "ENCRYPTED PRIVATE KEY":
				return nil, fmt.Errorf("%w: the private key is encrypted; upload it as PKCS#12 with its password", ErrUnrecognized)
			}
		}
	}
	for _, typ := range []string{"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"} {
		if k, err := parseKey(typ, data); err == nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%w: the key file is not a private key in PEM or DER", ErrUnrecognized)
}

// joinStoredKeys gives each record without a key the sealed key of a stored certificate
// with the same public key; for a partner's upload such a match is refused.
func joinStoredKeys(ctx context.Context, l Lister, parsed []Parsed, recs []persistence.Certificate, partner bool) error {
	var stored []persistence.Certificate
	for i, p := range parsed {
		if p.Key != nil {
			continue
		}
		if stored == nil {
			list, _, err := l.ListCertificates(ctx, persistence.ListOptions{Limit: maxListed})
			if err != nil {
				return fmt.Errorf("list certificates to find their keys: %w", err)
			}
			stored = list
		}
		for _, s := range stored {
			if !s.HasPrivateKey || !samePublicKey(p.Cert, s.DER) {
				continue
			}
			if partner {
				return &persistence.FieldError{Field: "file", Message: OwnAsPartner}
			}
			recs[i].SealedKey, recs[i].HasPrivateKey = s.SealedKey, true
			break
		}
	}
	return nil
}

func samePublicKey(c *x509.Certificate, der []byte) bool {
	other, err := x509.ParseCertificate(der)
	if err != nil {
		return false
	}
	pub, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(other.PublicKey)
}
