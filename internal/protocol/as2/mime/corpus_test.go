package mime

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
	"time"
)

// corpusTime lies inside the validity of the corpus certificates.
var corpusTime = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

type corpusCase struct {
	ID                string            `json:"id"`
	Group             string            `json:"group"`
	MessageID         string            `json:"message_id"`
	SenderCertificate string            `json:"sender_certificate"`
	PeerCertificate   string            `json:"peer_certificate"`
	Files             map[string]string `json:"files"`
	LayerDetails      []struct {
		Layer                  string `json:"layer"`
		Cipher                 string `json:"cipher"`
		CMSAlgorithmProtection *bool  `json:"cms_algorithm_protection"`
	} `json:"layer_details"`
	Expected struct {
		Signed               bool     `json:"signed"`
		Encrypted            bool     `json:"encrypted"`
		Compressed           bool     `json:"compressed"`
		Layers               []string `json:"layers"`
		Filename             *string  `json:"filename"`
		MIC                  string   `json:"mic"`
		MICAlgorithm         string   `json:"mic_algorithm"`
		Disposition          string   `json:"disposition"`
		OriginalMessageID    string   `json:"original_message_id"`
		MICAlgorithmConflict *struct {
			SignatureDigest      micValue `json:"signature_digest"`
			FirstRequestedMICAlg micValue `json:"first_requested_micalg"`
			ThisPeerRequires     string   `json:"this_peer_requires"`
		} `json:"mic_algorithm_conflict"`
	} `json:"expected"`
	MDN struct {
		Signed                   bool    `json:"signed"`
		Disposition              string  `json:"disposition"`
		MIC                      *string `json:"mic"`
		SignatureDigestAlgorithm *string `json:"signature_digest_algorithm"`
	} `json:"mdn"`
}

type micValue struct {
	MIC          string `json:"mic"`
	MICAlgorithm string `json:"mic_algorithm"`
}

// corpusDir finds shared/interop beside the repository, five levels above
// this package, or skips the test.
func corpusDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "..", "shared", "interop")
	if _, err := os.Stat(filepath.Join(dir, "cases.json")); err != nil {
		t.Skipf("interop corpus not found at %s: %v", dir, err)
	}
	return dir
}

func loadCorpus(t testing.TB) (string, []corpusCase) {
	dir := corpusDir(t)
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []corpusCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return dir, doc.Cases
}

func readFile(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pemCert(t testing.TB, b []byte) *x509.Certificate {
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

func pemKey(t testing.TB, b []byte) crypto.Signer {
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

func headersOf(t testing.TB, dir, name string) http.Header {
	var pairs [][2]string
	if err := json.Unmarshal(readFile(t, dir, name), &pairs); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for _, p := range pairs {
		h.Add(p[0], p[1])
	}
	return h
}
