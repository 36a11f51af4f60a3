package certs

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"

	"wharf/internal/persistence"
)

// Sealer seals private keys at rest (internal/secret implements it).
type Sealer interface {
	Seal(plain []byte) ([]byte, error)
}

// Unsealer opens sealed private keys (internal/secret implements it).
type Unsealer interface {
	Open(sealed []byte) ([]byte, error)
}

// Records turns parsed certificates into records to store, each private key sealed as
// PKCS#8 with sealer.
func Records(parsed []Parsed, description string, sealer Sealer) ([]persistence.Certificate, error) {
	out := make([]persistence.Certificate, 0, len(parsed))
	for _, p := range parsed {
		c := p.Cert
		rec := persistence.Certificate{
			Fingerprint:  Fingerprint(c.Raw),
			Subject:      c.Subject.String(),
			Issuer:       c.Issuer.String(),
			SerialNumber: c.SerialNumber.Text(16),
			NotBefore:    c.NotBefore,
			NotAfter:     c.NotAfter,
			Description:  description,
			DER:          c.Raw,
		}
		if p.Key != nil {
			der, err := x509.MarshalPKCS8PrivateKey(p.Key)
			if err != nil {
				return nil, fmt.Errorf("encode the private key of certificate %s: %w", rec.Fingerprint, err)
			}
			if rec.SealedKey, err = sealer.Seal(der); err != nil {
				return nil, fmt.Errorf("seal the private key of certificate %s: %w", rec.Fingerprint, err)
			}
			clear(der)
			rec.HasPrivateKey = true
		}
		out = append(out, rec)
	}
	return out, nil
}

// ErrNoPrivateKey means a certificate was stored without a private key, or its key
// cannot do what was asked of it.
var ErrNoPrivateKey = errors.New("no usable private key")

// CertificateGetter reads one stored certificate.
type CertificateGetter interface {
	GetCertificate(ctx context.Context, id int64) (persistence.Certificate, error)
}

// Opener gives the code that signs or decrypts the private key of a stored certificate,
// unsealing it at the moment it is asked for; nothing else ever sees the key.
type Opener struct {
	store CertificateGetter
	box   Unsealer
}

// NewOpener returns an Opener reading certificates from store and opening keys with box.
func NewOpener(store CertificateGetter, box Unsealer) *Opener {
	return &Opener{store: store, box: box}
}

// Signer returns the certificate with id and a signer over its private key.
func (o *Opener) Signer(ctx context.Context, id int64) (*x509.Certificate, crypto.Signer, error) {
	return o.open(ctx, id)
}

// Decrypter returns the certificate with id and a decrypter over its private key; only
// RSA keys decrypt.
func (o *Opener) Decrypter(ctx context.Context, id int64) (*x509.Certificate, crypto.Decrypter, error) {
	cert, key, err := o.open(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	d, ok := key.(crypto.Decrypter)
	if !ok {
		return nil, nil, fmt.Errorf("certificate %d: a %T key does not decrypt: %w", id, key, ErrNoPrivateKey)
	}
	return cert, d, nil
}

func (o *Opener) open(ctx context.Context, id int64) (*x509.Certificate, crypto.Signer, error) {
	rec, err := o.store.GetCertificate(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(rec.DER)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %d: stored certificate is damaged: %w", id, err)
	}
	if !rec.HasPrivateKey {
		return nil, nil, fmt.Errorf("certificate %d has no private key: %w", id, ErrNoPrivateKey)
	}
	der, err := o.box.Open(rec.SealedKey)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %d: open the private key: %w", id, err)
	}
	defer clear(der)
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %d: the stored private key is damaged: %w", id, err)
	}
	key, ok := k.(crypto.Signer)
	if !ok || !KeyMatches(cert, key) {
		return nil, nil, fmt.Errorf("certificate %d: the stored private key does not fit the certificate: %w", id, ErrNoPrivateKey)
	}
	return cert, key, nil
}
