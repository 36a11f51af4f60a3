package as2_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/protocol/as2/as2test"
)

// The live trial against pyas2-lib: a real Wharf gateway on loopback trades with
// scripts/interop/pyas2_peer.py (pyas2-lib's own code) over the profile matrix, both
// ways. Each cell logs a row of the table in docs/as2.md ("Tried against pyas2-lib").
// It runs when WHARF_INTEROP_PYAS2LIB names a pyas2-lib source directory.

// outCell is one Wharf → pyas2 profile.
type outCell struct {
	sign, encrypt    string // signing_algorithm, encryption_algorithm
	compress         string // "", "before_signing" or "after_signing"
	mdn              string // sync or async
	signedMDN        bool
	micAlg           string // mdn_mic_algorithm; sha256 when empty
	gcmConfirmed     bool
	wantRefused      string // the profile is refused with this text
	wantFailed       string // the delivery fails with this text
	wantPeerHasPlain bool   // the peer must hold the document (else: it holds something else)
}

func (c outCell) name() string {
	n := "sign=" + c.sign + "/enc=" + c.encrypt
	if c.compress != "" {
		n += "/compress=" + c.compress
	}
	if c.micAlg != "" {
		n += "/mic=" + c.micAlg
	}
	if c.gcmConfirmed {
		n += "/gcm_confirmed"
	}
	return n + fmt.Sprintf("/%s/signed-mdn=%v", c.mdn, c.signedMDN)
}

// outCells is the Wharf → pyas2 matrix: every protection with sync and async, signed and
// unsigned MDNs on the default algorithms; then each digest and cipher alone.
func outCells() []outCell {
	var cells []outCell
	protections := []struct{ sign, encrypt, compress string }{
		{"none", "none", ""},
		{"sha256", "none", ""},
		{"none", "aes256-cbc", ""},
		{"sha256", "aes256-cbc", ""},
		{"none", "none", "before_signing"},
		{"sha256", "aes256-cbc", "before_signing"},
		{"sha256", "aes256-cbc", "after_signing"},
	}
	for _, p := range protections {
		for _, mdn := range []string{"sync", "async"} {
			for _, signed := range []bool{true, false} {
				cells = append(cells, outCell{sign: p.sign, encrypt: p.encrypt, compress: p.compress,
					mdn: mdn, signedMDN: signed, wantPeerHasPlain: true})
			}
		}
	}
	for _, d := range []string{"sha384", "sha512"} {
		cells = append(cells, outCell{sign: d, encrypt: "aes256-cbc", mdn: "sync", signedMDN: true, micAlg: d, wantPeerHasPlain: true})
	}
	// pyas2-lib answers with the signature's digest whatever MIC algorithm we ask for.
	cells = append(cells, outCell{sign: "sha256", encrypt: "aes256-cbc", mdn: "sync", signedMDN: true, micAlg: "sha512", wantPeerHasPlain: true})
	for _, e := range []string{"aes128-cbc", "aes192-cbc"} {
		cells = append(cells, outCell{sign: "sha256", encrypt: e, mdn: "sync", signedMDN: true, wantPeerHasPlain: true})
	}
	cells = append(cells,
		outCell{sign: "sha256", encrypt: "3des", mdn: "sync", signedMDN: true, wantRefused: "encryption_algorithm"},
		outCell{sign: "sha256", encrypt: "aes128-gcm", mdn: "sync", signedMDN: true, wantRefused: "gcm_confirmed"},
		outCell{sign: "sha256", encrypt: "aes128-gcm", mdn: "sync", signedMDN: true, gcmConfirmed: true,
			wantFailed: "the partner may not support AES-GCM"},
		outCell{sign: "sha256", encrypt: "aes256-gcm", mdn: "async", signedMDN: true, gcmConfirmed: true,
			wantFailed: "the partner may not support AES-GCM"},
	)
	return cells
}

func TestInteropPyAS2(t *testing.T) {
	wharfID := as2test.NewIdentity(t, "wharf-interop")
	py := newPyPeer(t, "PYAS2", "WHARF", wharfID)
	peerURL, received := py.serve()
	eachGatewayDB(t, func(t *testing.T, dbURL string) {
		w := startPeer(t, "WHARF", dbURL)
		connectPyPeer(t, w, py, wharfID, peerURL)
		t.Run("wharf-to-pyas2", func(t *testing.T) {
			for _, c := range outCells() {
				t.Run(c.name(), func(t *testing.T) {
					w.t = t
					t.Logf("| Wharf → pyas2-lib | %s | %s |", c.name(), sendToPyAS2(t, w, c, received))
				})
			}
		})
		t.Run("pyas2-to-wharf", func(t *testing.T) {
			for _, c := range inCells() {
				t.Run(c.name(), func(t *testing.T) {
					w.t = t
					t.Logf("| pyas2-lib → Wharf | %s | %s |", c.name(), receiveFromPyAS2(t, w, py, c))
				})
			}
		})
	})
}

// setUpTrial gives Wharf its identity for a trial (the local profile of "local") and
// stores the peer's certificate, whose id it returns.
func setUpTrial(t *testing.T, w *peer, wharfID, peerID as2test.Identity) int64 {
	own := w.upload(append(certstest.CertsPEM(wharfID.Cert), certstest.KeyPEM(t, wharfID.Key, "pkcs8")...))
	w.json("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": w.name,
		"signing_certificate_id": own, "decryption_certificate_id": own}, nil)
	return w.upload(certstest.CertsPEM(peerID.Cert))
}

// connectPyPeer makes the pyas2 peer Wharf's partner "py".
func connectPyPeer(t *testing.T, w *peer, py *pyPeer, wharfID as2test.Identity, peerURL string) {
	theirs := setUpTrial(t, w, wharfID, py.id)
	w.json("POST", "/api/v1/partners", map[string]any{"name": "py", "display_name": "pyas2-lib"}, nil)
	w.json("POST", "/api/v1/as2/remote-profiles", map[string]any{"partner": "py", "as2_id": "PYAS2",
		"endpoint_url": peerURL, "partner_certificate_ids": []int64{theirs},
		"async_mdn_url": w.as2 + "/as2/mdn"}, nil)
}

// peerCopy waits for what the partner made of the message with the AS2 Message-ID and
// reports whether it holds the document, and a few words on what it read and answered.
type peerCopy func(t *testing.T, messageID string, doc []byte, fileName string, c outCell) (holds bool, answered string)

// sendToPyAS2 sends a document to the pyas2 peer under the cell's profile and returns
// the outcome for the table.
func sendToPyAS2(t *testing.T, w *peer, c outCell, outDir string) string {
	return sendCell(t, w, "py", c, func(t *testing.T, messageID string, doc []byte, fileName string, c outCell) (bool, string) {
		rec := received(t, outDir, messageID, time.Now().Add(30*time.Second))
		sum := sha256.Sum256(doc)
		holds := rec.SHA256 == hex.EncodeToString(sum[:])
		if holds && (rec.Status != "processed" || rec.Filename != fileName || rec.Signed != (c.sign != "none") ||
			rec.Encrypted != (c.encrypt != "none") || rec.Compressed != (c.compress != "")) {
			t.Fatalf("pyas2 recorded %+v for %s", rec, fileName)
		}
		return holds, "pyas2 answered " + rec.Status
	})
}

// sendCell sends a document to the partner under the cell's profile and returns the
// outcome for the table, failing the test where it differs from the cell's expectation.
func sendCell(t *testing.T, w *peer, partner string, c outCell, peerView peerCopy) string {
	path := "/api/v1/as2/remote-profiles/" + partner
	var r map[string]any
	w.do("GET", path, "", nil, &r)
	r["signing_algorithm"], r["encryption_algorithm"] = c.sign, c.encrypt
	r["compress"] = c.compress != ""
	if c.compress != "" {
		r["compression_order"] = c.compress
	}
	r["mdn_mode"], r["signed_mdn"] = c.mdn, c.signedMDN
	r["mdn_mic_algorithm"] = "sha256"
	if c.micAlg != "" {
		r["mdn_mic_algorithm"] = c.micAlg
	}
	r["gcm_confirmed"] = c.gcmConfirmed
	status, body := w.gw.API("PUT", path, "application/json", jsonBody(t, r))
	if c.wantRefused != "" {
		if status != 400 || !strings.Contains(string(body), c.wantRefused) {
			t.Fatalf("profile PUT = %d %s, want 400 naming %s", status, body, c.wantRefused)
		}
		return "profile refused: " + fieldError(body)
	}
	if status/100 != 2 {
		t.Fatalf("profile PUT = %d %s", status, body)
	}

	doc := make([]byte, 20<<10)
	_, _ = rand.Read(doc)
	sum := sha256.Sum256(doc)
	fileName := "order-" + hex.EncodeToString(sum[:4]) + ".bin"
	var sent messageView
	w.multipart("/api/v1/messages", map[string]string{"from": "local", "to": partner, "target": "as2_sender_default"}, fileName, doc, &sent)
	got := settled(t, w, sent.ID, time.Now().Add(60*time.Second))
	holds, answered := peerView(t, outboundMessageID(t, got), doc, fileName, c)
	d := got.Deliveries[0]
	if c.wantFailed != "" {
		if d.State != "failed" || !strings.Contains(d.LastError, c.wantFailed) {
			t.Fatalf("delivery %s (%s), want failed with %q", d.State, d.LastError, c.wantFailed)
		}
		held := "the document"
		if !holds {
			held = "other bytes (the ciphertext)"
		}
		reason, _, _ := strings.Cut(d.LastError, " (")
		return fmt.Sprintf("failed: %s (%s and holds %s)", reason, answered, held)
	}
	if d.State != "delivered" {
		t.Fatalf("delivery %s: %s (%s)", d.State, d.LastError, answered)
	}
	if holds != c.wantPeerHasPlain {
		t.Fatalf("the partner holds the document: %v, want %v (%s)", holds, c.wantPeerHasPlain, answered)
	}
	return "delivered, MDN " + receiptSummary(t, got)
}

// settled polls the message until its one delivery is delivered or failed.
func settled(t *testing.T, w *peer, id int64, deadline time.Time) messageView {
	t.Helper()
	var got messageView
	for {
		w.do("GET", fmt.Sprintf("/api/v1/messages/%d", id), "", nil, &got)
		if len(got.Deliveries) == 1 && (got.Deliveries[0].State == "delivered" || got.Deliveries[0].State == "failed") {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d not settled: %+v", id, got.Deliveries)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeDoc writes a random document for the peer to send and returns its path, name and
// SHA-256.
func writeDoc(t *testing.T, dir string) (path, name, sum string) {
	doc := make([]byte, 20<<10)
	_, _ = rand.Read(doc)
	s := sha256.Sum256(doc)
	name = "invoice-" + hex.EncodeToString(s[:4]) + ".bin"
	path = filepath.Join(dir, name)
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, name, hex.EncodeToString(s[:])
}

// inCell is one pyas2 → Wharf message: what pyas2-lib builds, and what Wharf's profile
// allows.
type inCell struct {
	digest    string // signature digest; unsigned when empty
	signAlg   string // rsassa_pkcs1v15 when empty
	enc       string // pyas2-lib's cipher name; unencrypted when empty
	compress  bool
	mdn       string // SYNC or ASYNC
	mdnDigest string // the signed MDN's digest; unsigned MDN when empty
	allowSHA1 bool
	// peerMayNotBuild: pyas2-lib may fail to build the message (a cipher its crypto
	// library leaves out); if it does build it, Wharf must refuse it.
	peerMayNotBuild bool
	// wantRefused is the text of the negative disposition; delivered when empty.
	wantRefused string
}

func (c inCell) name() string {
	n := "sign=" + orNone(c.digest)
	if c.signAlg != "" {
		n += "(" + c.signAlg + ")"
	}
	n += "/enc=" + orNone(c.enc)
	if c.compress {
		n += "/compressed"
	}
	if c.allowSHA1 {
		n += "/allow_sha1"
	}
	return n + "/" + strings.ToLower(c.mdn) + "/signed-mdn=" + orNone(c.mdnDigest)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// inCells is the pyas2 → Wharf matrix, like outCells; pyas2-lib compresses only before
// signing, and offers digests and ciphers Wharf refuses.
func inCells() []inCell {
	var cells []inCell
	protections := []inCell{
		{}, {digest: "sha256"}, {enc: "aes_256_cbc"}, {digest: "sha256", enc: "aes_256_cbc"},
		{compress: true}, {compress: true, digest: "sha256", enc: "aes_256_cbc"},
	}
	for _, p := range protections {
		for _, mdn := range []string{"SYNC", "ASYNC"} {
			for _, md := range []string{"sha256", ""} {
				c := p
				c.mdn, c.mdnDigest = mdn, md
				cells = append(cells, c)
			}
		}
	}
	signedEnc := func(c inCell) inCell {
		if c.digest == "" {
			c.digest = "sha256"
		}
		if c.enc == "" {
			c.enc = "aes_256_cbc"
		}
		if c.mdnDigest == "" {
			c.mdnDigest = c.digest
		}
		c.mdn = "SYNC"
		return c
	}
	for _, c := range []inCell{
		{digest: "sha384"}, {digest: "sha512"},
		{digest: "sha1", allowSHA1: true},
		{digest: "sha1", wantRefused: "insufficient-message-security"},
		{digest: "sha256", mdnDigest: "sha512"}, // pyas2-lib asks a MIC unlike its signature
		{signAlg: "rsassa_pss"},
		{enc: "tripledes_192_cbc"}, {enc: "aes_128_cbc"}, {enc: "aes_192_cbc"},
		{enc: "rc2_128_cbc", peerMayNotBuild: true, wantRefused: "decryption-failed"},
		{enc: "rc4_128_cbc", peerMayNotBuild: true, wantRefused: "decryption-failed"},
		{digest: "sha224", wantRefused: "authentication-failed"},
		{digest: "md5", wantRefused: "authentication-failed"},
	} {
		cells = append(cells, signedEnc(c))
	}
	return cells
}

// receiveFromPyAS2 has pyas2-lib send a document under the cell's options and returns the
// outcome for the table, failing the test where it differs from the cell's expectation.
func receiveFromPyAS2(t *testing.T, w *peer, py *pyPeer, c inCell) string {
	var r map[string]any
	w.do("GET", "/api/v1/as2/remote-profiles/py", "", nil, &r)
	r["require_signed"], r["require_encrypted"], r["allow_sha1"] = false, false, c.allowSHA1
	w.json("PUT", "/api/v1/as2/remote-profiles/py", r, nil)

	path, name, sum := writeDoc(t, t.TempDir())
	sent := py.send(t, pySendCase{URL: w.as2 + "/as2", File: path, Filename: name, Compress: c.compress,
		Sign: c.digest != "", DigestAlg: c.digest, SignAlg: c.signAlg, Encrypt: c.enc != "", EncAlg: c.enc,
		MDNMode: c.mdn, MDNDigestAlg: c.mdnDigest})
	if sent.BuildError != "" {
		if !c.peerMayNotBuild {
			t.Fatalf("pyas2-lib could not build the message: %s", sent.BuildError)
		}
		return "not sent: pyas2-lib could not build it here: " + sent.BuildError
	}
	if sent.HTTPStatus != 200 {
		t.Fatalf("Wharf answered HTTP %d: %s", sent.HTTPStatus, sent.HTTPBody)
	}
	if c.mdnDigest != "" && !sent.MDNSigned {
		t.Errorf("Wharf's MDN is unsigned, pyas2 asked for %s", c.mdnDigest)
	}
	inbox := filepath.Join(w.data, "inbox", "py", name)
	if c.wantRefused != "" {
		if sent.MDNStatus == "processed" || !strings.Contains(sent.MDNDetail, c.wantRefused) {
			t.Fatalf("pyas2 read Wharf's MDN as %q %q, want a refusal with %q", sent.MDNStatus, sent.MDNDetail, c.wantRefused)
		}
		if _, err := os.Stat(inbox); err == nil {
			t.Fatalf("Wharf delivered %s although it refused it", name)
		}
		return fmt.Sprintf("refused: %s: %s", sent.MDNStatus, sent.MDNDetail)
	}
	if sent.MDNStatus != "processed" {
		t.Fatalf("pyas2 read Wharf's MDN as %q %q", sent.MDNStatus, sent.MDNDetail)
	}
	if sent.MIC != "" && sent.MDNMIC != sent.MIC {
		t.Fatalf("Wharf's MDN carries MIC %q, pyas2 computed %q", sent.MDNMIC, sent.MIC)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(inbox)
		if err == nil {
			s := sha256.Sum256(data)
			if hex.EncodeToString(s[:]) != sum {
				t.Fatalf("Wharf delivered other bytes for %s", name)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Wharf's inbox lacks %s: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := "delivered, MDN processed"
	if sent.MDNSigned {
		s += ", signed"
	}
	if sent.MIC != "" {
		s += ", MIC matched"
	}
	return s
}
