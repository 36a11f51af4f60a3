package receiver

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

var (
	oidData           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidCompressedData = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 1, 9}
	oidZlibCompress   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 3, 8}
)

// compressedData writes a CompressedData ContentInfo (RFC 3274) in DER, independently
// of package cms: the openssl command line of Debian has no zlib.
func compressedData(t testing.TB, content []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	type algorithm struct{ Algorithm asn1.ObjectIdentifier }
	type encapsulated struct {
		ContentType asn1.ObjectIdentifier
		Content     []byte `asn1:"explicit,optional,tag:0"`
	}
	inner, err := asn1.Marshal(struct {
		Version     int
		Compression algorithm
		Content     encapsulated
	}{0, algorithm{oidZlibCompress}, encapsulated{oidData, z.Bytes()}})
	if err != nil {
		t.Fatal(err)
	}
	der, err := asn1.Marshal(struct {
		ContentType asn1.ObjectIdentifier
		Content     asn1.RawValue
	}{oidCompressedData, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: inner}})
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// A message the openssl command line signs (SHA-256) and encrypts (AES-256-CBC) around
// a compressed layer, posted with Go's HTTP client, is taken; its signed MDN verifies
// with openssl and carries the MIC over the signed part.
func TestOpenSSLMessage(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		org, partner := testParty(t, "wharf"), testParty(t, "acme")
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil)

		tmp := t.TempDir()
		orgCert, _ := as2test.WritePEM(t, tmp, org.cert, org.key)
		partnerCert, partnerKey := as2test.WritePEM(t, tmp, partner.cert, partner.key)
		payload := bytes.Repeat([]byte("ISA*00*          *00*          *ZZ*ACME           *ZZ*WHARF          *261130*1200*U*00401*000000001*0*P*>~\r\n"), 300)
		entity := append([]byte("Content-Type: application/edi-x12\r\nContent-Transfer-Encoding: binary\r\n"+
			"Content-Disposition: attachment; filename=\"po-4711.x12\"\r\n\r\n"), payload...)
		der := compressedData(t, entity)
		if got, err := cms.Decompress(der, 1<<20); err != nil || !bytes.Equal(got, entity) {
			t.Fatalf("the test's CompressedData does not open: %v", err)
		}
		compressed := append([]byte("Content-Type: application/pkcs7-mime; smime-type=compressed-data; name=\"smime.p7z\"\r\n"+
			"Content-Transfer-Encoding: binary\r\nContent-Disposition: attachment; filename=\"smime.p7z\"\r\n\r\n"), der...)
		in := filepath.Join(tmp, "compressed.bin")
		if err := os.WriteFile(in, compressed, 0o600); err != nil {
			t.Fatal(err)
		}
		signed, encrypted := filepath.Join(tmp, "signed.eml"), filepath.Join(tmp, "encrypted.eml")
		as2test.OpenSSL(t, "cms", "-sign", "-binary", "-md", "sha256", "-in", in, "-signer", partnerCert, "-inkey", partnerKey, "-out", signed)
		as2test.OpenSSL(t, "cms", "-encrypt", "-binary", "-aes-256-cbc", "-in", signed, "-recip", orgCert, "-out", encrypted)
		raw, err := os.ReadFile(encrypted)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := mime.ParseEntity(raw)
		if err != nil {
			t.Fatal(err)
		}
		header := http.Header{
			"AS2-From":                         {string(partner.id)},
			"AS2-To":                           {string(org.id)},
			"AS2-Version":                      {"1.2"},
			"Message-ID":                       {"<openssl-1@acme.example>"},
			"Disposition-Notification-To":      {"edi@acme.example"},
			"Disposition-Notification-Options": {"signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256"},
			"Content-Transfer-Encoding":        {msg.Header.Get("Content-Transfer-Encoding")},
		}
		a := post(t, rc.url(), msg.Header.Get("Content-Type"), header, msg.Body)
		if a.status != http.StatusOK {
			t.Fatalf("HTTP %d: %s", a.status, a.body)
		}

		mdnFile := filepath.Join(tmp, "mdn.eml")
		if err := os.WriteFile(mdnFile, append([]byte("Content-Type: "+a.header.Get("Content-Type")+"\r\n\r\n"), a.body...), 0o600); err != nil {
			t.Fatal(err)
		}
		report := filepath.Join(tmp, "report.txt")
		as2test.OpenSSL(t, "cms", "-verify", "-in", mdnFile, "-CAfile", orgCert, "-purpose", "any", "-out", report)
		verified, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(compressed)
		wantMIC := "Received-Content-MIC: " + base64.StdEncoding.EncodeToString(sum[:]) + ", sha-256"
		if !bytes.Contains(verified, []byte(wantMIC)) || !bytes.Contains(verified, []byte("Disposition: automatic-action/MDN-sent-automatically; processed\r\n")) {
			t.Errorf("verified MDN lacks %q or the processed disposition:\n%s", wantMIC, verified)
		}

		stored := b.message("as2_in", "<openssl-1@acme.example>")
		if !bytes.Equal(b.payload(stored.ID, persistence.PayloadUnpacked), payload) || stored.OriginalFileName != "po-4711.x12" {
			t.Errorf("stored %q, payload differs or misnamed", stored.OriginalFileName)
		}
		rec, err := FindInbound(b.ctx, b.sql, stored.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Layers; len(got) != 3 || got[0] != "encrypted" || got[1] != "signed" || got[2] != "compressed" ||
			rec.Cipher != string(cms.AES256CBC) || rec.SignatureAlgorithm != string(cms.SHA256) || rec.MDNMode != "sync" || !rec.MDNSigned {
			t.Errorf("record %+v", rec)
		}
	})
}
