package as2_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/protocol/as2/as2test"
)

// The live trial against OpenAS2 4.9.0, built from its source by
// scripts/interop/openas2_build.sh: a real Wharf gateway on loopback trades with a real
// OpenAS2 server over the profile matrix, both ways. Each OpenAS2 partnership plays one
// cell under an AS2 id of its own, since OpenAS2 finds a partnership by the pair of ids.
// Each cell logs a row of the table in docs/as2.md ("Tried against OpenAS2").

// oa2InCell is one OpenAS2 → Wharf message: the partnership's attributes, and what Wharf's
// profile allows.
type oa2InCell struct {
	sign, encrypt string // OpenAS2's values; none when empty
	compress      string // "", "before" or "after" signing
	async         bool
	signedMDN     bool
	micalg        string // the MIC algorithm asked for; the signature's (or sha-256) when empty
	allowSHA1     bool
	wantRefused   string // Wharf refuses it and OpenAS2 logs this refusal
}

func (c oa2InCell) name() string {
	n := "sign=" + orNone(c.sign) + "/encrypt=" + orNone(c.encrypt)
	if c.compress != "" {
		n += "/compress=" + c.compress
	}
	if c.micalg != "" {
		n += "/micalg=" + c.micalg
	}
	if c.allowSHA1 {
		n += "/allow_sha1"
	}
	mode := "sync"
	if c.async {
		mode = "async"
	}
	return n + fmt.Sprintf("/%s/signed-mdn=%v", mode, c.signedMDN)
}

// attrs are the partnership attributes of the cell; "$async$" stands for OpenAS2's MDN URL.
func (c oa2InCell) attrs() [][2]string {
	var a [][2]string
	if c.sign != "" {
		a = append(a, [2]string{"sign", c.sign})
	}
	if c.encrypt != "" {
		a = append(a, [2]string{"encrypt", c.encrypt})
	}
	switch c.compress {
	case "before":
		a = append(a, [2]string{"compression_type", "ZLIB"})
	case "after":
		a = append(a, [2]string{"compression_type", "ZLIB"}, [2]string{"compression_mode", "compress-after-signing"})
	}
	micalg := c.micalg
	if micalg == "" {
		micalg = strings.ToLower(c.sign)
		if micalg == "" {
			micalg = "sha-256"
		}
	}
	options := "none"
	if c.signedMDN {
		options = "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, " + micalg
	}
	a = append(a, [2]string{"as2_mdn_options", options})
	if c.async {
		a = append(a, [2]string{"as2_receipt_option", "$async$"})
	}
	return a
}

func oa2InCells() []oa2InCell {
	var cells []oa2InCell
	protections := []oa2InCell{
		{}, {sign: "SHA-256"}, {encrypt: "aes256"}, {sign: "SHA-256", encrypt: "aes256"},
		{compress: "before"}, {sign: "SHA-256", encrypt: "aes256", compress: "before"},
		{sign: "SHA-256", encrypt: "aes256", compress: "after"},
	}
	for _, p := range protections {
		for _, async := range []bool{false, true} {
			for _, signed := range []bool{true, false} {
				c := p
				c.async, c.signedMDN = async, signed
				cells = append(cells, c)
			}
		}
	}
	for _, c := range []oa2InCell{
		{sign: "SHA-384", encrypt: "aes256"}, {sign: "SHA-512", encrypt: "aes256"},
		{sign: "SHA-1", encrypt: "aes256", allowSHA1: true},
		{sign: "SHA-1", encrypt: "aes256", wantRefused: "processed/error: insufficient-message-security"},
		{sign: "SHA-256", encrypt: "aes256", micalg: "sha-512"},
		{sign: "SHA-256", encrypt: "3des"}, {sign: "SHA-256", encrypt: "aes128"}, {sign: "SHA-256", encrypt: "aes192"},
	} {
		c.signedMDN = true
		cells = append(cells, c)
	}
	return cells
}

func TestInteropOpenAS2(t *testing.T) {
	classpath := buildOpenAS2(t)
	wharfID := as2test.NewIdentity(t, "wharf-interop")
	eachGatewayDB(t, func(t *testing.T, dbURL string) {
		w := startPeer(t, "WHARF", dbURL)
		outs, ins := outCells(), oa2InCells()
		var parts []*oa2Partnership
		for i := range outs {
			parts = append(parts, &oa2Partnership{ID: fmt.Sprintf("OA2-R%02d", i)})
		}
		for i, c := range ins {
			parts = append(parts, &oa2Partnership{ID: fmt.Sprintf("OA2-S%02d", i), Sends: true, Attrs: c.attrs()})
		}
		oa := startOpenAS2(t, classpath, wharfID, w.as2+"/as2", parts)
		connectOpenAS2(t, w, oa, wharfID, parts)
		t.Run("wharf-to-openas2", func(t *testing.T) {
			for i, c := range outs {
				part := parts[i]
				t.Run(c.name(), func(t *testing.T) {
					w.t = t
					t.Logf("| Wharf → OpenAS2 | %s | %s |", c.name(), sendCell(t, w, partnerName(part), c, oa.copyIn(part)))
				})
			}
		})
		t.Run("openas2-to-wharf", func(t *testing.T) {
			for i, c := range ins {
				part := parts[len(outs)+i]
				t.Run(c.name(), func(t *testing.T) {
					w.t = t
					t.Logf("| OpenAS2 → Wharf | %s | %s |", c.name(), receiveFromOpenAS2(t, w, oa, part, c))
				})
			}
		})
	})
}

func partnerName(p *oa2Partnership) string { return strings.ToLower(p.ID) }

// connectOpenAS2 makes each of OpenAS2's cell identities a partner of Wharf.
func connectOpenAS2(t *testing.T, w *peer, oa *oa2Peer, wharfID as2test.Identity, parts []*oa2Partnership) {
	theirs := setUpTrial(t, w, wharfID, oa.id)
	for _, p := range parts {
		name := partnerName(p)
		w.json("POST", "/api/v1/partners", map[string]any{"name": name, "display_name": "OpenAS2 " + p.ID}, nil)
		w.json("POST", "/api/v1/as2/remote-profiles", map[string]any{"partner": name, "as2_id": p.ID,
			"endpoint_url": oa.url, "partner_certificate_ids": []int64{theirs},
			"async_mdn_url": w.as2 + "/as2/mdn", "require_signed": false, "require_encrypted": false}, nil)
	}
}

// copyIn reads what OpenAS2 stored for the partnership: the one file Wharf sent it.
func (oa *oa2Peer) copyIn(p *oa2Partnership) peerCopy {
	return func(t *testing.T, messageID string, doc []byte, fileName string, c outCell) (bool, string) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			files, _ := filepath.Glob(filepath.Join(p.Received, "*"))
			if len(files) == 1 {
				data, err := os.ReadFile(files[0])
				if err == nil {
					return bytes.Equal(data, doc), "OpenAS2 stored a file"
				}
			}
			if len(files) > 1 {
				t.Fatalf("OpenAS2 stored %d files for one message", len(files))
			}
			if time.Now().After(deadline) {
				t.Fatalf("OpenAS2 stored nothing for %s:\n%s", messageID, oa.log())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// receiveFromOpenAS2 drops a document in the partnership's outbox, waits for OpenAS2 to
// settle it, and checks what Wharf delivered.
func receiveFromOpenAS2(t *testing.T, w *peer, oa *oa2Peer, p *oa2Partnership, c oa2InCell) string {
	name := partnerName(p)
	var r map[string]any
	w.do("GET", "/api/v1/as2/remote-profiles/"+name, "", nil, &r)
	r["allow_sha1"] = c.allowSHA1
	w.json("PUT", "/api/v1/as2/remote-profiles/"+name, r, nil)

	path, fileName, sum := writeDoc(t, t.TempDir())
	doc, _ := os.ReadFile(path)
	// Renamed into the outbox, so the poller never sees half a file.
	if err := os.Rename(path, filepath.Join(p.Outbox, fileName)); err != nil {
		t.Fatal(err)
	}
	outcome := oa.settle(t, p)
	inbox := filepath.Join(w.data, "inbox", name)
	if c.wantRefused != "" {
		if !strings.Contains(outcome, c.wantRefused) {
			t.Fatalf("OpenAS2: %q, want Wharf's refusal %q", outcome, c.wantRefused)
		}
		if files, _ := filepath.Glob(filepath.Join(inbox, "*")); len(files) != 0 {
			t.Fatalf("Wharf delivered %v although it refused the message", files)
		}
		return "refused; " + outcome
	}
	if outcome != "sent" {
		t.Fatalf("OpenAS2: %s\n%s", outcome, oa.log())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(inbox, "*"))
		for _, f := range files {
			if data, err := os.ReadFile(f); err == nil && bytes.Equal(data, doc) {
				return "delivered; OpenAS2 accepted the MDN"
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Wharf's inbox lacks the document (sha256 %s): %v", sum, files)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settle waits until OpenAS2 has moved the partnership's file to its sent folder ("sent":
// the MDN was accepted, its MIC matched) or to its error folder (then the reason from its
// log).
func (oa *oa2Peer) settle(t *testing.T, p *oa2Partnership) string {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if files, _ := filepath.Glob(filepath.Join(p.Sent, "*")); len(files) > 0 {
			return "sent"
		}
		if files, _ := filepath.Glob(filepath.Join(p.Failed, "*")); len(files) > 0 {
			return oa.lastError(p.ID)
		}
		if time.Now().After(deadline) {
			t.Fatalf("OpenAS2 did not settle %s:\n%s", p.ID, oa.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastError is what OpenAS2 logged of the failure for the AS2 id: the disposition it
// read from the MDN when it logged one, else its last ERROR or WARN line.
func (oa *oa2Peer) lastError(id string) string {
	var last string
	for _, l := range strings.Split(oa.log(), "\n") {
		if !strings.Contains(l, id) {
			continue
		}
		if _, disp, ok := strings.Cut(l, "Received disposition: "); ok {
			disp, _, _ = strings.Cut(disp, " [<")
			return "OpenAS2 read the disposition " + strings.TrimSpace(disp)
		}
		if strings.Contains(l, " ERROR ") || strings.Contains(l, " WARN ") {
			last = l
		}
	}
	return last
}
