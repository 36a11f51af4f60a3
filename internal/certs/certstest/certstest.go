// Package certstest makes keys, certificates and PKCS#12 files for tests: a CA and
// leaves signed by it with crypto/x509, and PKCS#12 bundles built by the openssl command
// line as an independent implementation.
package certstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Pair is a certificate with its private key.
type Pair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// RSAKey makes a 2048-bit RSA key.
func RSAKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// ECKey makes a P-256 key.
func ECKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// CA makes a self-signed CA certificate valid from a day ago for ten years.
func CA(tb testing.TB, name string) Pair {
	tb.Helper()
	key := ECKey(tb)
	tmpl := caTemplate(tb, name, 10)
	return sign(tb, tmpl, tmpl, key, key)
}

// Leaf makes a certificate for key signed by ca, valid from notBefore to notAfter.
func Leaf(tb testing.TB, ca Pair, name string, key crypto.Signer, notBefore, notAfter time.Time) Pair {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Wharf Test"}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	return sign(tb, tmpl, ca.Cert, key, ca.Key)
}

// ValidLeaf makes a certificate for key signed by ca, valid from a day ago for a year.
func ValidLeaf(tb testing.TB, ca Pair, name string, key crypto.Signer) Pair {
	tb.Helper()
	return Leaf(tb, ca, name, key, time.Now().Add(-24*time.Hour), time.Now().Add(365*24*time.Hour))
}

func serial(tb testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatal(err)
	}
	return n.Add(n, big.NewInt(1))
}

func sign(tb testing.TB, tmpl, parent *x509.Certificate, key, parentKey crypto.Signer) Pair {
	tb.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return Pair{Cert: c, Key: key}
}

// CertsPEM encodes certificates as CERTIFICATE blocks.
func CertsPEM(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// Key forms for KeyPEM.
const (
	PKCS8 = "PKCS8"
	PKCS1 = "PKCS1" // RSA only
	SEC1  = "SEC1"  // EC only
)

// KeyPEM encodes key as a PEM block of the form.
func KeyPEM(tb testing.TB, key crypto.Signer, form string) []byte {
	tb.Helper()
	var b *pem.Block
	switch form {
	case PKCS1:
		b = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))}
	case SEC1:
		der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		if err != nil {
			tb.Fatal(err)
		}
		b = &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
	default:
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			tb.Fatal(err)
		}
		b = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	return pem.EncodeToMemory(b)
}

// OpenSSLPKCS12 builds a PKCS#12 file with `openssl pkcs12 -export` from leaf, its key
// and the chain, under password. It skips the test when openssl is not installed.
func OpenSSLPKCS12(tb testing.TB, leaf Pair, chain []*x509.Certificate, password string) []byte {
	tb.Helper()
	path, err := exec.LookPath("openssl")
	if err != nil {
		tb.Skip("openssl not installed")
	}
	dir := tb.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	args := []string{"pkcs12", "-export",
		"-in", write("leaf.pem", CertsPEM(leaf.Cert)),
		"-inkey", write("key.pem", KeyPEM(tb, leaf.Key, PKCS8)),
		"-out", filepath.Join(dir, "bundle.p12"),
		"-passout", "file:" + write("pass.txt", []byte(password+"\n")),
	}
	if len(chain) > 0 {
		args = append(args, "-certfile", write("chain.pem", CertsPEM(chain...)))
	}
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		tb.Fatalf("openssl %v: %v\n%s", args, err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "bundle.p12"))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// Issue makes a certificate for the public key pub and subject, signed by ca and valid
// from a day ago for a year, as a CA answers a certificate request.
func Issue(tb testing.TB, ca Pair, subject pkix.Name, pub crypto.PublicKey) *x509.Certificate {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      subject,
		NotBefore:    time.Now().Add(-24 * time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
