package as2_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/protocol/as2/as2test"
)

// pyas2LibEnv names a pyas2-lib source directory; the live trial runs only when it is set.
const pyas2LibEnv = "WHARF_INTEROP_PYAS2LIB"

// pythonEnv names the Python that runs the peer (python3 on PATH when unset): one with
// pyas2-lib's dependencies (asn1crypto, oscrypto, pyOpenSSL) installed.
const pythonEnv = "WHARF_INTEROP_PYTHON"

// pyPeer is scripts/interop/pyas2_peer.py with its identity: a pyas2-lib trading partner
// run as a separate process.
type pyPeer struct {
	t      *testing.T
	python string
	script string
	config string // the script's CONFIG file
	id     as2test.Identity
	dir    string
}

// newPyPeer prepares the peer with the AS2 id asID trading with the Wharf identity
// wharfID (whose certificate it trusts), or skips the test when the trial is not set up.
func newPyPeer(t *testing.T, asID, wharfID string, wharf as2test.Identity) *pyPeer {
	t.Helper()
	if os.Getenv(pyas2LibEnv) == "" {
		t.Skipf("%s is unset: the live trial against pyas2-lib needs its source (see docs/as2.md)", pyas2LibEnv)
	}
	python := os.Getenv(pythonEnv)
	if python == "" {
		python = "python3"
	}
	python, err := exec.LookPath(python)
	if err != nil {
		t.Fatalf("the pyas2-lib trial needs Python (%s): %v", pythonEnv, err)
	}
	script, err := filepath.Abs("../../../scripts/interop/pyas2_peer.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	id := as2test.NewIdentity(t, "pyas2-peer")
	keyPEM := append(certstest.CertsPEM(id.Cert), certstest.KeyPEM(t, id.Key, "pkcs8")...)
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg := map[string]any{
		"org":     map[string]string{"as2_name": asID, "key_pem": write("peer.pem", keyPEM)},
		"partner": map[string]string{"as2_name": wharfID, "cert_pem": write("wharf.crt", certstest.CertsPEM(wharf.Cert))},
	}
	b, _ := json.Marshal(cfg)
	return &pyPeer{t: t, python: python, script: script, config: write("config.json", b), id: id, dir: dir}
}

// serve starts the peer's receiver and returns its URL and the directory it records
// each message in; it stops when the test ends.
func (p *pyPeer) serve() (url, outDir string) {
	p.t.Helper()
	outDir = filepath.Join(p.dir, "received")
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(p.python, p.script, "serve", p.config, outDir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start the pyas2 peer: %v", err)
	}
	p.t.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			p.t.Errorf("pyas2 peer: %v", err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		p.t.Fatalf("pyas2 peer did not start: %q %v", line, err)
	}
	return url, outDir
}

// pyReceived is what the peer's receiver recorded of one message.
type pyReceived struct {
	MessageID  string `json:"message_id"`
	Status     string `json:"status"`
	Error      string `json:"error"`
	Signed     bool   `json:"signed"`
	Encrypted  bool   `json:"encrypted"`
	Compressed bool   `json:"compressed"`
	DigestAlg  string `json:"digest_alg"`
	EncAlg     string `json:"enc_alg"`
	Filename   string `json:"filename"`
	SHA256     string `json:"sha256"`
}

// received waits for the peer's record of the message with the id.
func received(t *testing.T, outDir, messageID string, deadline time.Time) pyReceived {
	t.Helper()
	for {
		files, _ := filepath.Glob(filepath.Join(outDir, "*.json"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var r pyReceived
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if r.MessageID == messageID {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pyas2 peer has no record of %s", messageID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pySendCase is one message the peer builds and sends (the script's CASE).
type pySendCase struct {
	URL          string `json:"url"`
	File         string `json:"file"`
	Filename     string `json:"filename"`
	Compress     bool   `json:"compress"`
	Sign         bool   `json:"sign"`
	DigestAlg    string `json:"digest_alg,omitempty"`
	SignAlg      string `json:"sign_alg,omitempty"`
	Encrypt      bool   `json:"encrypt"`
	EncAlg       string `json:"enc_alg,omitempty"`
	MDNMode      string `json:"mdn_mode,omitempty"`
	MDNDigestAlg string `json:"mdn_digest_alg,omitempty"`
}

// pySent is the peer's account of a message it sent and the MDN it verified.
type pySent struct {
	// BuildError is why pyas2-lib could not build the message; nothing was sent.
	BuildError string `json:"build_error"`
	MessageID  string `json:"message_id"`
	MIC        string `json:"mic"`
	HTTPStatus int    `json:"http_status"`
	HTTPBody   string `json:"http_body"`
	MDNStatus  string `json:"mdn_status"`
	MDNDetail  string `json:"mdn_detail"`
	MDNSigned  bool   `json:"mdn_signed"`
	MDNMIC     string `json:"mdn_mic"`
}

// send has the peer build and post one message and verify the MDN.
func (p *pyPeer) send(t *testing.T, c pySendCase) pySent {
	t.Helper()
	b, _ := json.Marshal(c)
	casePath := filepath.Join(p.dir, "case.json")
	if err := os.WriteFile(casePath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.python, p.script, "send", p.config, casePath)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyas2 peer send: %v: %s", err, out)
	}
	var s pySent
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("pyas2 peer send printed %q: %v", out, err)
	}
	return s
}
