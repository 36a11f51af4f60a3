package receiver

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// largeMessageSize is the document of the large-message tests: well past every buffer
// the receiver holds, so a copy of the message in memory shows in its allocations.
const largeMessageSize = 64 << 20

// largeAllocBudget is what receiving one large message may allocate in all: a small
// part of the message, so no layer is held whole.
const largeAllocBudget = largeMessageSize / 4

// A 64 MiB message that the openssl command line signs and encrypts around a
// compressed layer is opened in one pass: with a BER body of indefinite lengths sent
// chunked (openssl cms -stream) and with a DER body of known length. The document is
// stored byte for byte, the signed MDN carries the MIC over the signed part, and the
// whole exchange allocates a fraction of the message.
func TestLargeOpenSSLMessageInBoundedMemory(t *testing.T) {
	tmp := t.TempDir()
	org := testParty(t, "wharf")
	orgCert, _ := as2test.WritePEM(t, tmp, org.cert, org.key)
	compressed, docSum, micSum := writeLargeCompressedEntity(t, tmp)
	// Each body is signed by a partner of its own: one signature sent twice is a replay.
	bodies := []struct {
		name, file string
		partner    party
		chunked    bool
		encrypt    []string
	}{
		{"ber-chunked", filepath.Join(tmp, "ber.p7m"), testParty(t, "acme"), true, []string{"-stream"}},
		{"der-length", filepath.Join(tmp, "der.p7m"), testParty(t, "globex"), false, nil},
	}
	for _, body := range bodies {
		dir := t.TempDir()
		partnerCert, partnerKey := as2test.WritePEM(t, dir, body.partner.cert, body.partner.key)
		signed := filepath.Join(dir, "signed.eml")
		as2test.OpenSSL(t, "cms", "-sign", "-binary", "-stream", "-md", "sha256", "-in", compressed, "-signer", partnerCert, "-inkey", partnerKey, "-out", signed)
		as2test.OpenSSL(t, append(append([]string{"cms", "-encrypt", "-binary"}, body.encrypt...),
			"-aes-256-cbc", "-outform", "DER", "-in", signed, "-recip", orgCert, "-out", body.file)...)
	}
	if ber, _ := os.ReadFile(bodies[0].file); len(ber) < 2 || ber[1] != 0x80 {
		t.Fatal("openssl -stream did not write indefinite lengths")
	}

	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{bodies[0].partner, bodies[1].partner})
		dir := newDirectory()
		for _, body := range bodies {
			dir.add(inbound(org, body.partner, nil))
		}
		rc := b.start("as2_in", dir, func(c *Config, _ *Deps) { c.MaxBodyMiB = 256 })
		for _, body := range bodies {
			name, file, partner := body.name, body.file, body.partner
			t.Run(name, func(t *testing.T) {
				id := "<large-" + name + "@acme.example>"
				header := http.Header{
					"Content-Type":                     {"application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m"},
					"AS2-From":                         {string(partner.id)},
					"AS2-To":                           {string(org.id)},
					"AS2-Version":                      {"1.2"},
					"Message-ID":                       {id},
					"Disposition-Notification-To":      {"edi@acme.example"},
					"Disposition-Notification-Options": {"signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256"},
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				a := postFile(t, rc.url(), header, file, !body.chunked)
				runtime.ReadMemStats(&after)
				if a.status != http.StatusOK {
					t.Fatalf("HTTP %d: %s", a.status, a.body)
				}
				alloc := after.TotalAlloc - before.TotalAlloc
				t.Logf("receiving %d MiB allocated %.1f MiB", largeMessageSize>>20, float64(alloc)/(1<<20))
				if alloc > largeAllocBudget {
					t.Errorf("receiving %d MiB allocated %d MiB, more than the budget of %d MiB", largeMessageSize>>20, alloc>>20, largeAllocBudget>>20)
				}
				m := parseMDN(t, a, org.cert)
				want := mime.MIC{Digest: micSum, Algorithm: "SHA-256"}
				if !m.Disposition.Successful() || m.ReceivedContentMIC == nil || base64.StdEncoding.EncodeToString(m.ReceivedContentMIC.Digest) != base64.StdEncoding.EncodeToString(want.Digest) {
					t.Fatalf("MDN %s with MIC %q, want processed with %s", m.Disposition, m.RawMIC, base64.StdEncoding.EncodeToString(micSum))
				}
				stored := b.message("as2_in", id)
				if got := b.blobDigest(stored.ID, persistence.PayloadUnpacked); !bytes.Equal(got, docSum) || stored.Size != largeMessageSize || stored.OriginalFileName != "large.bin" {
					t.Errorf("stored %q of %d bytes, digest %x; want large.bin of %d bytes, %x", stored.OriginalFileName, stored.Size, got, largeMessageSize, docSum)
				}
				if chunked := bytes.Contains(b.payload(stored.ID, persistence.PayloadHeaders), []byte("Transfer-Encoding: chunked\r\n")); chunked != body.chunked {
					t.Errorf("body sent chunked: %v, want %v", chunked, body.chunked)
				}
				sent := fileDigest(t, file)
				if got := b.blobDigest(stored.ID, persistence.PayloadReceived); !bytes.Equal(got, sent) {
					t.Error("the received stage differs from the request body")
				}
			})
		}
	})
}

// writeLargeCompressedEntity writes the MIME entity of a CompressedData (RFC 3274, in
// DER, made here with compress/zlib independently of package cms) around a document
// of random bytes, streamed to files. It returns the entity's file, the document's
// SHA-256 and the entity's (the MIC of a message signed around it).
func writeLargeCompressedEntity(t *testing.T, dir string) (string, []byte, []byte) {
	t.Helper()
	zfile, err := os.Create(filepath.Join(dir, "doc.z"))
	if err != nil {
		t.Fatal(err)
	}
	defer zfile.Close()
	doc := sha256.New()
	zw, _ := zlib.NewWriterLevel(zfile, zlib.BestSpeed)
	io.WriteString(zw, "Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: binary\r\nContent-Disposition: attachment; filename=\"large.bin\"\r\n\r\n")
	if _, err := io.CopyN(io.MultiWriter(zw, doc), rand.Reader, largeMessageSize); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zsize, err := zfile.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	mustDER := func(v any) []byte {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	octets := derHead(0x04, int(zsize))
	encap := append(mustDER(oidData), derHead(0xa0, len(octets)+int(zsize))...)
	encapSeq := derHead(0x30, len(encap)+len(octets)+int(zsize))
	alg := mustDER(struct{ Algorithm asn1.ObjectIdentifier }{oidZlibCompress})
	version := mustDER(0)
	innerLen := len(version) + len(alg) + len(encapSeq) + len(encap) + len(octets) + int(zsize)
	inner := append(append(derHead(0x30, innerLen), version...), alg...)
	explicitLen := len(inner) + len(encapSeq) + len(encap) + len(octets) + int(zsize)
	oid := mustDER(oidCompressedData)
	head := append(derHead(0x30, len(oid)+len(derHead(0xa0, explicitLen))+explicitLen), oid...)
	head = append(head, derHead(0xa0, explicitLen)...)
	head = append(append(append(append(head, inner...), encapSeq...), encap...), octets...)

	name := filepath.Join(dir, "compressed.bin")
	out, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	mic := sha256.New()
	w := bufio.NewWriter(io.MultiWriter(out, mic))
	w.WriteString("Content-Type: application/pkcs7-mime; smime-type=compressed-data; name=\"smime.p7z\"\r\n" +
		"Content-Transfer-Encoding: binary\r\nContent-Disposition: attachment; filename=\"smime.p7z\"\r\n\r\n")
	w.Write(head)
	if _, err := zfile.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, zfile); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return name, doc.Sum(nil), mic.Sum(nil)
}

// derHead is a DER tag and definite length.
func derHead(tag byte, n int) []byte {
	if n < 0x80 {
		return []byte{tag, byte(n)}
	}
	var l []byte
	for v := n; v > 0; v >>= 8 {
		l = append([]byte{byte(v)}, l...)
	}
	return append([]byte{tag, 0x80 | byte(len(l))}, l...)
}

// postFile posts a file as an AS2 body, with its length or chunked.
func postFile(t *testing.T, url string, header http.Header, name string, withLength bool) reply {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var body io.Reader = struct{ io.Reader }{f} // no length: sent chunked
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if withLength {
		info, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = info.Size()
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readReply(t, resp)
}

// blobDigest is the SHA-256 of a stored stage, read as a stream.
func (b *bench) blobDigest(id int64, stage persistence.PayloadStage) []byte {
	b.t.Helper()
	r := b.openPayload(id, stage)
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		b.t.Fatal(err)
	}
	return h.Sum(nil)
}

func fileDigest(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return h.Sum(nil)
}

// An AES-GCM message larger than the receiver holds in memory to check its tag is
// refused with decryption-failed, its reason naming the bound, and kept as refused; one
// within the bound is taken.
func TestGCMBodyPastTheBoundRefused(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	gcm := func() mime.BuildOptions {
		o := secureOpts(partner, org)
		o.Encrypt.Cipher = cms.AES128GCM
		return o
	}
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil, func(rc *Receiver) { rc.spoolAbove, rc.maxAEAD = 64<<10, 1<<20 })
		within := build(t, partner, org, randomBytes(t, 512<<10), "within.bin", gcm())
		if m := parseMDN(t, post(t, rc.url(), within.contentType, within.header, within.body), org.cert); !m.Disposition.Successful() {
			t.Fatalf("GCM message within the bound: %s", m.Disposition)
		}
		past := build(t, partner, org, randomBytes(t, 2<<20), "past.bin", gcm())
		m := parseMDN(t, post(t, rc.url(), past.contentType, past.header, past.body), org.cert)
		if want := "automatic-action/MDN-sent-automatically; processed/error: decryption-failed"; m.Disposition.String() != want {
			t.Fatalf("disposition %q, want %q", m.Disposition, want)
		}
		rec, err := FindRefusal(b.ctx, s.ModuleSQL(), b.refused(past.header.Get("Message-ID")).ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rec.Reason, "AES-GCM content of more than 1048576 bytes") || rec.BodySize != int64(len(past.body)) {
			t.Errorf("refusal %q of a body of %d bytes does not name the bound", rec.Reason, rec.BodySize)
		}
	})
}

// A request file a crash left behind is removed when a receiver starts, once it is older
// than any request lasts; a recent one, which a running request of another instance
// may own, and other files stay.
func TestStaleSpoolsRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-25 * time.Hour)
	for name, age := range map[string]time.Time{"as2-body-1": old, "as2-payload-2": old, "as2-body-3": time.Now(), "keep.txt": old} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeStaleSpools(dir, time.Now().Add(-staleSpool)); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"as2-body-3", "keep.txt"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}
