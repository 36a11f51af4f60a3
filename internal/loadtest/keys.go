package loadtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// identity is one instance's AS2 key pair: the certificate alone goes to the partner,
// the certificate with its key to the instance itself.
type identity struct {
	certPEM []byte
	keyPEM  []byte
}

// bundle is the certificate followed by its PKCS#8 private key, as one upload.
func (id identity) bundle() []byte {
	return append(append([]byte(nil), id.certPEM...), id.keyPEM...)
}

// newIdentity makes an RSA-2048 key and a self-signed certificate valid from an hour ago
// (a clock slightly behind still accepts it) for a year.
func newIdentity(commonName string, now time.Time) (identity, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return identity{}, fmt.Errorf("generate key for %s: %w", commonName, err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return identity{}, err
	}
	// RFC 5280 §4.2.1.2 method 1: partners that identify certificates by subject key
	// identifier find this one.
	ski := sha1.Sum(pub)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return identity{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"Wharf load test"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		SubjectKeyId:          ski[:],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return identity{}, fmt.Errorf("certificate for %s: %w", commonName, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return identity{}, err
	}
	return identity{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
	}, nil
}
