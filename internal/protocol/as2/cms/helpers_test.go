package cms

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
	"sync"
	"testing"
	"time"
)

// identity is a throwaway certificate and key made for the tests.
type identity struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (id identity) recipient() Recipient {
	return Recipient{Certificate: id.cert, Key: id.key.(crypto.Decrypter)}
}

var (
	identitiesMu sync.Mutex
	identities   = map[string]identity{}
)

// testIdentity returns a self-signed identity per name, made once per test
// binary. Names starting with "ec" get a P-256 key, "expired" one that
// expired a year ago.
func testIdentity(t testing.TB, name string) identity {
	t.Helper()
	identitiesMu.Lock()
	defer identitiesMu.Unlock()
	if id, ok := identities[name]; ok {
		return id
	}
	var key crypto.Signer
	var err error
	if len(name) >= 2 && name[:2] == "ec" {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	notBefore := time.Now().Add(-time.Hour)
	notAfter := time.Now().Add(24 * time.Hour)
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
	id := identity{cert: cert, key: key}
	identities[name] = id
	return id
}

// writePEM stores the identity for openssl and returns the file names.
func writePEM(t testing.TB, dir string, id identity) (certFile, keyFile string) {
	t.Helper()
	certFile = filepath.Join(dir, id.cert.Subject.CommonName+".crt")
	keyFile = filepath.Join(dir, id.cert.Subject.CommonName+".key")
	keyDER, err := x509.MarshalPKCS8PrivateKey(id.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// openssl runs the openssl command line, skipping the test when it is not
// installed.
func openssl(t testing.TB, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl %v: %v\n%s", args, err, out)
	}
	return out
}
