package mime

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"mime/quotedprintable"
	"net/http"
	"testing"

	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
)

// Fuzz targets for what a partner sends: request bodies, MDNs and the encodings inside
// them. Their seeds (the interop corpus and messages built here) run in every go test;
// scripts/fuzz.sh runs them as fuzzers.

// maxFuzzSeed leaves the corpus's multi-megabyte message out of the seeds: it would slow
// every execution without reaching code the small ones miss.
const maxFuzzSeed = 64 << 10

// fuzzMaxDecompressed bounds inflation while fuzzing, so a mutated bomb costs little.
const fuzzMaxDecompressed = 1 << 20

// errorClasses are the failure classes an unpacked message or a partner's MDN may end
// in; the AS2 layer maps each to a disposition, so every error must wrap one of them.
var errorClasses = []error{
	ErrMalformed, ErrTransferEncoding, ErrUnsupportedLayer, ErrNotMDN, ErrIO,
	cms.ErrDecryption, cms.ErrUnsupportedAlgorithm, cms.ErrAuthentication, cms.ErrIntegrity,
	cms.ErrDecompression, cms.ErrInsufficientSecurity, cms.ErrMalformed,
}

func classified(err error) bool {
	for _, c := range errorClasses {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

// fuzzKeys are the identities the fuzz targets open and verify with: the corpus's own
// (so its messages decrypt and verify) and a throwaway pair for built messages.
type fuzzKeys struct {
	recipients []cms.Recipient
	partners   []*x509.Certificate
	ours       identity
}

func loadFuzzKeys(f testing.TB, dir string) fuzzKeys {
	f.Helper()
	gogw := as2test.PEMCertificate(f, as2test.CorpusFile(f, dir, "keys/gogw.crt"))
	key := as2test.PEMPrivateKey(f, as2test.CorpusFile(f, dir, "keys/gogw.key"))
	ours := testIdentity(f, "fuzz-ours")
	return fuzzKeys{
		recipients: []cms.Recipient{{Certificate: gogw, Key: key.(crypto.Decrypter)}, ours.recipient()},
		partners: []*x509.Certificate{
			as2test.PEMCertificate(f, as2test.CorpusFile(f, dir, "keys/peera.crt")),
			as2test.PEMCertificate(f, as2test.CorpusFile(f, dir, "keys/peerb.crt")),
			ours.cert,
		},
		ours: ours,
	}
}

func FuzzDecodeTransferEncoding(f *testing.F) {
	for _, s := range []struct{ cte, body string }{
		{"base64", "QQ"}, {"base64", "QQ=="}, {"base64", "QUJD\r\nREVG\r\nRw"}, {"base64", "QQ="},
		{"quoted-printable", "caf=C3=A9 =\r\nnext"}, {"quoted-printable", "=ZZ"}, {"binary", "\x00\xff"},
		{" BASE64 ", "AAEC"}, {"x-uuencode", "begin"}, {"", "plain"},
	} {
		f.Add(s.cte, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, cte string, body []byte) {
		out, err := DecodeTransferEncoding(cte, body)
		if err != nil {
			if !errors.Is(err, ErrTransferEncoding) || out != nil {
				t.Fatalf("error %v (with %d bytes) is not ErrTransferEncoding alone", err, len(out))
			}
			return
		}
		// What decoded encodes back to the same content.
		var again []byte
		switch lower := bytes.ToLower(bytes.TrimSpace([]byte(cte))); string(lower) {
		case "base64":
			again, err = DecodeTransferEncoding(cte, []byte(base64.StdEncoding.EncodeToString(out)))
		case "quoted-printable":
			var b bytes.Buffer
			w := quotedprintable.NewWriter(&b)
			w.Binary = true // line breaks are content, written encoded
			_, _ = w.Write(out)
			_ = w.Close()
			again, err = DecodeTransferEncoding(cte, b.Bytes())
		default:
			if !bytes.Equal(out, body) {
				t.Fatalf("identity encoding %q changed the body", cte)
			}
			return
		}
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("%s round trip: %q, %v; want %q", cte, again, err, out)
		}
	})
}

// FuzzUnpack opens request bodies in memory as the receiver does for a small one
// (FuzzUnpackStream holds the one-pass opening to the same results).
func FuzzUnpack(f *testing.F) {
	_, opts := addUnpackSeeds(f)
	f.Fuzz(func(t *testing.T, contentType, cte string, body []byte) {
		header := http.Header{}
		if cte != "" {
			header.Set("Content-Transfer-Encoding", cte)
		}
		res, err := Unpack(contentType, header, body, opts)
		if res == nil {
			t.Fatalf("no result (error %v)", err)
		}
		if err != nil && !classified(err) {
			t.Fatalf("error of no class: %v", err)
		}
		if err == nil {
			if res.Signed != (res.Signer != nil) || res.Encrypted != (res.Decryption != nil) {
				t.Fatalf("signed %v with signer %v, encrypted %v with %v", res.Signed, res.Signer, res.Encrypted, res.Decryption)
			}
			if res.Signed && res.MIC.Digest == nil {
				t.Fatal("a signed message without a MIC")
			}
		}
	})
}

// addUnpackSeeds adds the request bodies FuzzUnpack and FuzzUnpackStream start from
// and returns the keys and options they open them with.
func addUnpackSeeds(f *testing.F) (fuzzKeys, UnpackOptions) {
	dir, cases := loadCorpus(f)
	keys := loadFuzzKeys(f, dir)
	for _, c := range cases {
		if c.Group != "inbound" {
			continue
		}
		body := as2test.CorpusFile(f, dir, c.Files["request_body"])
		if len(body) > maxFuzzSeed {
			continue
		}
		h := as2test.CorpusHeader(f, dir, c.Files["request_headers"])
		f.Add(h.Get("Content-Type"), h.Get("Content-Transfer-Encoding"), body)
	}
	doc := []byte("UNB+UNOA:1+SENDER+RECEIVER'\r\nUNZ+1'\r\n")
	for _, o := range []BuildOptions{
		{},
		{Compress: true},
		{Sign: keys.ours.signer(cms.SHA256)},
		{Compress: true, Sign: keys.ours.signer(cms.SHA384), Encrypt: &Encryption{Recipients: []*x509.Certificate{keys.ours.cert}, EncryptOptions: cms.EncryptOptions{Cipher: cms.AES128GCM}}},
		{Sign: keys.ours.signer(cms.SHA256), Encrypt: &Encryption{Recipients: []*x509.Certificate{keys.ours.cert}, EncryptOptions: cms.EncryptOptions{Cipher: cms.AES256CBC}}},
	} {
		b, err := Build(doc, "order.edi", o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b.ContentType, b.Header.Get("Content-Transfer-Encoding"), b.Body)
	}
	f.Add("application/pkcs7-mime; smime-type=enveloped-data", "base64", []byte("QQ"))
	return keys, UnpackOptions{Decryption: keys.recipients, PartnerCertificates: keys.partners, AllowSHA1: true,
		VerifyTime: corpusTime, MaxDecompressedSize: fuzzMaxDecompressed, TempDir: f.TempDir()}
}

// randomKey reports a CBC layer whose key came by PKCS #1 v1.5: one that does not
// decrypt yields a random key rather than an error (so the padding check leaks
// nothing), and what it decrypts to may then pass a check by chance.
func randomKey(res *Result) bool {
	d := res.Decryption
	return d != nil && d.KeyTransport == cms.RSAPKCS1v15 && d.Cipher != cms.AES128GCM && d.Cipher != cms.AES256GCM
}

// FuzzParseMDN reads partners' MDNs, signed and not.
func FuzzParseMDN(f *testing.F) {
	dir, cases := loadCorpus(f)
	keys := loadFuzzKeys(f, dir)
	for _, c := range cases {
		if c.Group != "mdn" {
			continue
		}
		h := as2test.CorpusHeader(f, dir, c.Files["mdn_headers"])
		f.Add(h.Get("Content-Type"), as2test.CorpusFile(f, dir, c.Files["mdn_body"]))
	}
	mic := ComputeMIC([]byte("signed part"), cms.SHA256)
	for _, sign := range []*Signer{nil, keys.ours.signer(cms.SHA256)} {
		ct, body, err := BuildMDN(MDN{ReportingUA: "Wharf", OriginalRecipient: "WHARF", OriginalMessageID: "<a@b>",
			Disposition: ProcessedWith("error", "decryption-failed"), ReceivedContentMIC: &mic, Text: "text"}, MDNBuildOptions{Sign: sign})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ct, body)
	}
	f.Add(`multipart/report; boundary="r"`, []byte("--r\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\nQQ\r\n"+
		"--r\r\nContent-Type: message/disposition-notification\r\n\r\nOriginal-Message-ID: <a@b>\r\n"+
		"Disposition: automatic-action/MDN-sent-automatically; processed\r\n\r\n--r--\r\n"))
	opts := MDNParseOptions{PartnerCertificates: keys.partners, AllowSHA1: true, VerifyTime: corpusTime}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		m, err := ParseMDN(contentType, body, opts)
		if err != nil {
			if !classified(err) {
				t.Fatalf("error of no class: %v", err)
			}
			return
		}
		if m.Fields == nil || m.Signed != (m.Signer != nil) {
			t.Fatalf("MDN without fields, or signed %v with signer %v", m.Signed, m.Signer)
		}
		if m.ReceivedContentMIC != nil {
			again, err := ParseMIC(m.ReceivedContentMIC.String())
			if err != nil || !again.Equal(*m.ReceivedContentMIC) {
				t.Fatalf("MIC %q does not read back: %v", m.ReceivedContentMIC, err)
			}
		}
		// An MDN read without a signature requirement is refused with one only if unsigned.
		if _, err := ParseMDN(contentType, body, MDNParseOptions{PartnerCertificates: keys.partners, AllowSHA1: true,
			VerifyTime: corpusTime, RequireSigned: true}); (err == nil) != m.Signed {
			t.Fatalf("signed %v, but RequireSigned gives %v", m.Signed, err)
		}
	})
}

// FuzzParseDisposition reads the Disposition field of an MDN: what it reads writes back
// to a value that reads the same.
func FuzzParseDisposition(f *testing.F) {
	for _, s := range []string{
		"automatic-action/MDN-sent-automatically; processed",
		"automatic-action/MDN-sent-automatically; processed/error: decryption-failed",
		"manual-action/MDN-sent-manually; processed/warning: duplicate-document",
		"automatic-action/MDN-sent-automatically; failed/failure: sender-equals-receiver",
		" Automatic-Action / MDN-Sent-Automatically ; Processed / Error : authentication-failed ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDisposition(s)
		if err != nil {
			return
		}
		again, err := ParseDisposition(d.String())
		if err != nil || again != d {
			t.Fatalf("%q reads as %q, which reads as %q (%v)", s, d.String(), again.String(), err)
		}
		if d.Successful() && d.ModifierKind() == "error" {
			t.Fatalf("%q is both successful and an error", s)
		}
	})
}
