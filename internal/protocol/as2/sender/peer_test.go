package sender

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	gomime "mime"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// peer is the trading partner of the tests: an HTTP server on loopback that opens what
// Wharf sends with the openssl command line (decrypt, verify) and answers as the test
// says, with MDNs it signs with openssl.
type peer struct {
	t           *testing.T
	dir         string
	partnerCert string
	partnerKey  string
	ourCert     string
	srv         *httptest.Server

	mu     sync.Mutex
	got    []received
	answer func(w http.ResponseWriter, rcv received)
}

// received is one request as the peer opened it.
type received struct {
	header http.Header
	body   []byte
	// micContent is the first part of the multipart/signed, which the MIC covers.
	micContent []byte
	payload    []byte
	fileName   string
	// compressedOutside is set when a compressed layer held the signed message
	// (compressed after signing).
	compressedOutside bool
	err               error
	// contentLength and transferEncoding are the request's framing.
	contentLength    int64
	transferEncoding []string
}

func newPeer(t *testing.T, ours, partner as2test.Identity) *peer {
	t.Helper()
	p := &peer{t: t, dir: t.TempDir()}
	p.partnerCert, p.partnerKey = as2test.WritePEM(t, p.dir, partner.Cert, partner.Key)
	p.ourCert, _ = as2test.WritePEM(t, p.dir, ours.Cert, ours.Key)
	p.answer = func(w http.ResponseWriter, _ received) { w.WriteHeader(http.StatusOK) }
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *peer) url() string { return p.srv.URL + "/as2" }

func (p *peer) setAnswer(fn func(w http.ResponseWriter, rcv received)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = fn
}

func (p *peer) requests() []received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]received(nil), p.got...)
}

func (p *peer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.t.Errorf("peer: read request: %v", err)
		return
	}
	rcv := received{header: r.Header.Clone(), body: body, contentLength: r.ContentLength, transferEncoding: r.TransferEncoding}
	p.mu.Lock()
	n := len(p.got)
	p.mu.Unlock()
	rcv.micContent, rcv.payload, rcv.fileName, rcv.compressedOutside, rcv.err = p.open(n, r.Header, body)
	if rcv.err != nil {
		p.t.Errorf("peer: open request: %v", rcv.err)
	}
	p.mu.Lock()
	p.got = append(p.got, rcv)
	answer := p.answer
	p.mu.Unlock()
	w.Header().Set("Server", "ACME test peer/1.0")
	answer(w, rcv)
}

// open decrypts and verifies a request with openssl and returns what the MIC (and the
// signature, when signed) covers and the document in it. OpenSSL reads S/MIME only in
// base64, so the binary body is re-encoded under its own MIME header; OpenSSL here has no
// zlib, so a compressed layer is inflated with package cms after openssl verified the
// signature over it, or before, when it holds the signed message.
func (p *peer) open(n int, h http.Header, body []byte) (micContent, payload []byte, fileName string, compressedOutside bool, err error) {
	micContent, payload, fileName, compressedOutside, err = p.openLayers(n, h, body)
	return
}

func (p *peer) openLayers(n int, h http.Header, body []byte) ([]byte, []byte, string, bool, error) {
	compressedOutside := false
	dir := filepath.Join(p.dir, fmt.Sprintf("req%d", n))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, nil, "", false, err
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	var req bytes.Buffer
	req.WriteString("MIME-Version: 1.0\r\nContent-Type: " + h.Get("Content-Type") + "\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	req.WriteString(base64Lines(body))
	if err := os.WriteFile(file("req.eml"), req.Bytes(), 0o600); err != nil {
		return nil, nil, "", false, err
	}
	if _, err := runOpenSSL("cms", "-decrypt", "-binary", "-in", file("req.eml"), "-recip", p.partnerCert,
		"-inkey", p.partnerKey, "-out", file("signed.eml")); err != nil {
		return nil, nil, "", false, err
	}
	signed, err := os.ReadFile(file("signed.eml"))
	if err != nil {
		return nil, nil, "", false, err
	}
	head, rest, ok := bytes.Cut(signed, []byte("\r\n\r\n"))
	if !ok {
		return nil, nil, "", false, errors.New("decrypted entity has no header section")
	}
	if strings.Contains(headerField(string(head), "Content-Type"), "compressed-data") {
		if signed, err = cms.Decompress(rest, 1<<30); err != nil {
			return nil, nil, "", false, err
		}
		compressedOutside = true
		if head, rest, ok = bytes.Cut(signed, []byte("\r\n\r\n")); !ok {
			return nil, nil, "", false, errors.New("decompressed entity has no header section")
		}
	}
	mt, params, err := gomime.ParseMediaType(headerField(string(head), "Content-Type"))
	if err != nil {
		return nil, nil, "", false, err
	}
	if mt != "multipart/signed" {
		// Unsigned: the MIC covers the decrypted entity, headers and content.
		_, dparams, _ := gomime.ParseMediaType(headerField(string(head), "Content-Disposition"))
		return signed, rest, dparams["filename"], compressedOutside, nil
	}
	delim := "--" + params["boundary"]
	first, after, ok := bytes.Cut(rest, []byte(delim+"\r\n"))
	if !ok || len(bytes.TrimSpace(first)) != 0 {
		return nil, nil, "", false, errors.New("no first boundary")
	}
	part1, after, ok := bytes.Cut(after, []byte("\r\n"+delim+"\r\n"))
	if !ok {
		return nil, nil, "", false, errors.New("no second part")
	}
	part2, _, ok := bytes.Cut(after, []byte("\r\n"+delim+"--"))
	if !ok {
		part2, _, _ = bytes.Cut(after, []byte(delim+"--"))
	}
	_, sig64, _ := bytes.Cut(part2, []byte("\r\n\r\n"))
	sig, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(sig64)), ""))
	if err != nil {
		return nil, nil, "", false, fmt.Errorf("signature part: %w", err)
	}
	if err := os.WriteFile(file("content.bin"), part1, 0o600); err != nil {
		return nil, nil, "", false, err
	}
	if err := os.WriteFile(file("sig.der"), sig, 0o600); err != nil {
		return nil, nil, "", false, err
	}
	if _, err := runOpenSSL("cms", "-verify", "-binary", "-inform", "DER", "-in", file("sig.der"),
		"-content", file("content.bin"), "-CAfile", p.ourCert, "-purpose", "any", "-out", file("verified.bin")); err != nil {
		return nil, nil, "", false, err
	}
	verified, err := os.ReadFile(file("verified.bin"))
	if err != nil {
		return nil, nil, "", false, err
	}
	if !bytes.Equal(verified, part1) {
		return nil, nil, "", false, errors.New("openssl verified other bytes than the signed part")
	}
	entity := part1
	entHead, entBody, _ := bytes.Cut(entity, []byte("\r\n\r\n"))
	if strings.Contains(headerField(string(entHead), "Content-Type"), "compressed-data") {
		if entity, err = cms.Decompress(entBody, 1<<30); err != nil {
			return nil, nil, "", false, err
		}
		entHead, entBody, _ = bytes.Cut(entity, []byte("\r\n\r\n"))
	}
	_, dparams, _ := gomime.ParseMediaType(headerField(string(entHead), "Content-Disposition"))
	return part1, entBody, dparams["filename"], compressedOutside, nil
}

// headerField finds a field in a header section without continuation lines.
func headerField(head, name string) string {
	for _, line := range strings.Split(head, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func base64Lines(b []byte) string {
	s := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	for len(s) > 76 {
		out.WriteString(s[:76] + "\r\n")
		s = s[76:]
	}
	out.WriteString(s + "\r\n")
	return out.String()
}

// runOpenSSL runs the openssl command line; unlike as2test.OpenSSL it returns its error,
// since the peer runs on the server's goroutines.
func runOpenSSL(args ...string) ([]byte, error) {
	path, err := exec.LookPath("openssl")
	if err != nil {
		return nil, errors.New("the openssl command line is the tests' independent peer; install it")
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// mdnSpec is what the peer's MDN says.
type mdnSpec struct {
	Disposition string
	// MIC is the Received-Content-MIC value; "" leaves the field out.
	MIC string
	// Tamper changes a byte of the signed report after signing.
	Tamper bool
}

// requestedMIC is the MIC the peer returns: over what the signature covers, with the
// first algorithm the request asked for (SHA-256 when it asked for none).
func requestedMIC(rcv received) string {
	alg := cms.SHA256
	if first, ok := mime.ParseDispositionOptions(rcv.header.Get("Disposition-Notification-Options")).FirstSupportedMIC(); ok {
		alg = first.Algorithm
	}
	return mime.ComputeMIC(rcv.micContent, alg).String()
}

// signedMDN writes a multipart/report for the request and signs it with openssl; it
// returns the Content-Type and the body to send.
func (p *peer) signedMDN(rcv received, spec mdnSpec) (string, []byte, error) {
	p.mu.Lock()
	dir, err := os.MkdirTemp(p.dir, "mdn")
	p.mu.Unlock()
	if err != nil {
		return "", nil, err
	}
	fields := "Reporting-UA: ACME test peer\r\nOriginal-Recipient: rfc822; ACME\r\nFinal-Recipient: rfc822; ACME\r\n" +
		"Original-Message-ID: " + rcv.header.Get("Message-Id") + "\r\nDisposition: " + spec.Disposition + "\r\n"
	if spec.MIC != "" {
		fields += "Received-Content-MIC: " + spec.MIC + "\r\n"
	}
	report := "Content-Type: multipart/report; report-type=disposition-notification; boundary=\"rpt-1\"\r\n\r\n" +
		"--rpt-1\r\nContent-Type: text/plain\r\n\r\nThis is the receipt for your message.\r\n" +
		"--rpt-1\r\nContent-Type: message/disposition-notification\r\n\r\n" + fields + "\r\n--rpt-1--\r\n"
	in, out := filepath.Join(dir, "report.eml"), filepath.Join(dir, "mdn.eml")
	if err := os.WriteFile(in, []byte(report), 0o600); err != nil {
		return "", nil, err
	}
	if _, err := runOpenSSL("cms", "-sign", "-in", in, "-signer", p.partnerCert, "-inkey", p.partnerKey,
		"-md", "sha256", "-crlfeol", "-out", out); err != nil {
		return "", nil, err
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return "", nil, err
	}
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		return "", nil, errors.New("openssl wrote no header section")
	}
	if spec.Tamper {
		tampered := bytes.Replace(body, []byte("Reporting-UA: ACME"), []byte("Reporting-UA: ACMF"), 1)
		if bytes.Equal(tampered, body) {
			return "", nil, errors.New("nothing to tamper with")
		}
		body = tampered
	}
	return headerField(string(head), "Content-Type"), body, nil
}

// answerMDN answers each request with a signed MDN.
func (p *peer) answerMDN(spec func(rcv received) mdnSpec) func(http.ResponseWriter, received) {
	return func(w http.ResponseWriter, rcv received) {
		ct, body, err := p.signedMDN(rcv, spec(rcv))
		if err != nil {
			p.t.Errorf("peer: sign MDN: %v", err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Message-ID", "<mdn-1@acme.test>")
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	}
}

const processed = "automatic-action/MDN-sent-automatically; processed"

// positive is a correct receipt.
func positive(rcv received) mdnSpec { return mdnSpec{Disposition: processed, MIC: requestedMIC(rcv)} }

func answerStatus(code int, header map[string]string) func(http.ResponseWriter, received) {
	return func(w http.ResponseWriter, _ received) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		io.WriteString(w, http.StatusText(code)+"\r\n")
	}
}

// answerText answers code with a text/plain body.
func answerText(code int, body string) func(http.ResponseWriter, received) {
	return func(w http.ResponseWriter, _ received) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}
