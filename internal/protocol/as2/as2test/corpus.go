package as2test

import (
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// CorpusDir is the interop corpus kept with this package (testdata/interop): real AS2
// traffic of other products with the values a correct gateway derives from it.
func CorpusDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "testdata", "interop")
	if _, err := os.Stat(filepath.Join(dir, "cases.json")); err != nil {
		t.Fatalf("interop corpus: %v", err)
	}
	return dir
}

// CorpusCases decodes the corpus's cases into cases, a pointer to a slice of the caller's
// case type (each test reads the fields it needs), and returns the corpus directory.
func CorpusCases(t testing.TB, cases any) string {
	t.Helper()
	dir := CorpusDir(t)
	doc := struct {
		Cases any `json:"cases"`
	}{Cases: cases}
	if err := json.Unmarshal(CorpusFile(t, dir, "cases.json"), &doc); err != nil {
		t.Fatalf("interop corpus cases.json: %v", err)
	}
	return dir
}

// CorpusFile reads a file of the corpus by its path in cases.json.
func CorpusFile(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CorpusHeaderPairs reads a recorded header list: [name, value] pairs in the order sent.
func CorpusHeaderPairs(t testing.TB, dir, name string) [][2]string {
	t.Helper()
	var pairs [][2]string
	if err := json.Unmarshal(CorpusFile(t, dir, name), &pairs); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pairs
}

// CorpusHeader is CorpusHeaderPairs as an http.Header.
func CorpusHeader(t testing.TB, dir, name string) http.Header {
	t.Helper()
	h := http.Header{}
	for _, p := range CorpusHeaderPairs(t, dir, name) {
		h.Add(p[0], p[1])
	}
	return h
}

// PEMCertificate parses the first PEM block of b as a certificate.
func PEMCertificate(t testing.TB, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// PEMPrivateKey parses the first PEM block of b as a PKCS #8 or PKCS #1 private key.
func PEMPrivateKey(t testing.TB, b []byte) crypto.Signer {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		return k.(crypto.Signer)
	}
	k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
