// Package as2test gives the AS2 packages' tests throwaway identities and the openssl
// command line, the independent peer their interop tests talk to.
package as2test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Identity is a self-signed certificate with its key.
type Identity struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

var (
	mu         sync.Mutex
	identities = map[string]Identity{}
)

// NewIdentity returns a self-signed identity per name, made once per test binary: RSA
// 2048 by default, P-256 for names starting with "ec", and one that expired a year ago
// for the name "expired".
func NewIdentity(t testing.TB, name string) Identity {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if id, ok := identities[name]; ok {
		return id
	}
	var key crypto.Signer
	var err error
	if strings.HasPrefix(name, "ec") {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	notBefore, notAfter := time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if name == "expired" {
		notBefore, notAfter = time.Now().Add(-2*365*24*time.Hour), time.Now().Add(-365*24*time.Hour)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	ski := sha1.Sum(pubDER)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Wharf test"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		SubjectKeyId:          ski[:],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Cert: cert, Key: key}
	identities[name] = id
	return id
}

// WritePEM stores an identity for openssl and returns the file names.
func WritePEM(t testing.TB, dir string, cert *x509.Certificate, key crypto.Signer) (certFile, keyFile string) {
	t.Helper()
	certFile = filepath.Join(dir, cert.Subject.CommonName+".crt")
	keyFile = filepath.Join(dir, cert.Subject.CommonName+".key")
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// OpenSSL runs the openssl command line and returns what it printed; a failure fails
// the test. The tests need openssl installed.
func OpenSSL(t testing.TB, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("the openssl command line is the independent peer of these tests; install it (Debian: apt-get install openssl)")
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl %v: %v\n%s", args, err, out)
	}
	return out
}
