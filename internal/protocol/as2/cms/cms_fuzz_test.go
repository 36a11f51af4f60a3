package cms

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"wharf/internal/protocol/as2/as2test"
)

// Fuzz targets for the CMS layer a partner's message reaches before anything else:
// identification, BER normalisation, decompression, decryption and signature
// verification. Their seeds run in every go test; scripts/fuzz.sh runs them as fuzzers.

// fuzzLimit bounds inflation while fuzzing, so a mutated bomb costs little.
const fuzzLimit = 1 << 20

// corpusEnvelopes are the encrypted request bodies of the interop corpus, as the CMS
// bytes (base64 bodies decoded); large ones are left out to keep executions fast.
func corpusEnvelopes(f *testing.F) [][]byte {
	f.Helper()
	var cases []struct {
		Group string            `json:"group"`
		Files map[string]string `json:"files"`
	}
	dir := as2test.CorpusCases(f, &cases)
	var out [][]byte
	for _, c := range cases {
		if c.Group != "inbound" {
			continue
		}
		h := as2test.CorpusHeader(f, dir, c.Files["request_headers"])
		if !strings.Contains(h.Get("Content-Type"), "pkcs7-mime") {
			continue
		}
		body := as2test.CorpusFile(f, dir, c.Files["request_body"])
		if len(body) > 64<<10 {
			continue
		}
		if strings.EqualFold(strings.TrimSpace(h.Get("Content-Transfer-Encoding")), "base64") {
			d, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(body)), ""))
			if err != nil {
				f.Fatal(err)
			}
			body = d
		}
		out = append(out, body)
	}
	if len(out) == 0 {
		f.Fatal("the corpus holds no encrypted request")
	}
	return out
}

// fuzzRecipients open the corpus's envelopes and those built for the seeds.
func fuzzRecipients(f *testing.F, own identity) []Recipient {
	f.Helper()
	dir := as2test.CorpusDir(f)
	cert := as2test.PEMCertificate(f, as2test.CorpusFile(f, dir, "keys/gogw.crt"))
	key := as2test.PEMPrivateKey(f, as2test.CorpusFile(f, dir, "keys/gogw.key"))
	return []Recipient{{Certificate: cert, Key: key.(crypto.Decrypter)}, own.recipient()}
}

// berSeeds are the shapes of TestNormalizeBER: indefinite lengths, chunked strings.
var berSeeds = []string{
	"30 03 02 01 05", "30 80 02 01 05 00 00", "30 80 a0 80 04 01 aa 00 00 00 00",
	"24 80 04 02 aa bb 04 01 cc 00 00", "24 80 24 80 04 01 aa 00 00 04 01 bb 00 00",
	"24 06 04 01 aa 04 01 bb", "04 81 02 aa bb", "1f 81 81 81 81 01 00", "04 84 7f ff ff ff aa",
}

func addBERSeeds(f *testing.F) {
	for _, s := range berSeeds {
		f.Add(unhex(f, s))
	}
}

func isClassified(err error) bool {
	for _, c := range []error{ErrDecryption, ErrUnsupportedAlgorithm, ErrAuthentication, ErrIntegrity,
		ErrDecompression, ErrInsufficientSecurity, ErrMalformed} {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

func FuzzIdentify(f *testing.F) {
	addBERSeeds(f)
	for _, e := range corpusEnvelopes(f) {
		f.Add(e)
	}
	z, _ := Compress([]byte("content"))
	f.Add(z)
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := Identify(data)
		if err != nil {
			// A ContentInfo that does not read is malformed; one of another content
			// type is an unsupported algorithm.
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedAlgorithm) {
				t.Fatalf("error of another class: %v", err)
			}
			return
		}
		switch k {
		case KindEnvelopedData, KindAuthEnvelopedData, KindCompressedData, KindSignedData:
		default:
			t.Fatalf("unknown kind %q", k)
		}
	})
}

// FuzzNormalizeBER: what normalises is DER, so it normalises to itself and is one
// element covering all of it.
func FuzzNormalizeBER(f *testing.F) {
	addBERSeeds(f)
	for _, e := range corpusEnvelopes(f) {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		der, err := normalizeBER(data)
		if err != nil {
			return
		}
		again, err := normalizeBER(der)
		if err != nil || !bytes.Equal(again, der) {
			t.Fatalf("DER % x normalises to % x (%v)", der, again, err)
		}
		hdr, content, ok := splitDER(der)
		if !ok || len(hdr)+len(content) != len(der) {
			t.Fatalf("DER % x does not split into one element", der)
		}
	})
}

// FuzzDecompress: what inflates stays within the limit, and compressing it again
// inflates to the same content.
func FuzzDecompress(f *testing.F) {
	addBERSeeds(f)
	for _, c := range [][]byte{nil, []byte("a"), bytes.Repeat([]byte("EDI segment'\r\n"), 200)} {
		z, err := Compress(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(z)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Decompress(data, fuzzLimit)
		if err != nil {
			if !errors.Is(err, ErrDecompression) && !errors.Is(err, ErrUnsupportedAlgorithm) {
				t.Fatalf("error of another class: %v", err)
			}
			return
		}
		if len(out) > fuzzLimit {
			t.Fatalf("%d bytes inflated past the limit of %d", len(out), fuzzLimit)
		}
		z, err := Compress(out)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decompress(z, fuzzLimit)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("round trip of %d bytes: %d bytes, %v", len(out), len(again), err)
		}
	})
}

// FuzzDecrypt: in memory and streamed, an envelope opens to the same plaintext or fails
// in both (unless its key is random, see randomKey), with an error of a class the AS2
// layer maps to a disposition.
func FuzzDecrypt(f *testing.F) {
	own := testIdentity(f, "fuzz-recipient")
	recipients := fuzzRecipients(f, own)
	for _, e := range corpusEnvelopes(f) {
		f.Add(e)
	}
	for _, o := range []EncryptOptions{
		{Cipher: AES128CBC}, {Cipher: AES256CBC, KeyTransport: RSAOAEPSHA256},
		{Cipher: AES128GCM}, {Cipher: AES256GCM, SubjectKeyID: true},
	} {
		e, err := Encrypt([]byte("UNB+UNOA:1+A+B'"), []*x509.Certificate{own.cert}, o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		plain, info, err := Decrypt(data, recipients)
		if err != nil && !isClassified(err) {
			t.Fatalf("error of no class: %v", err)
		}
		if err == nil && info == nil {
			t.Fatal("opened without saying how")
		}
		var streamed bytes.Buffer
		sinfo, serr := DecryptTo(&streamed, bytes.NewReader(data), recipients)
		if randomKey(info) || randomKey(sinfo) {
			return // a damaged key opens to a random one; the content may then pass by chance
		}
		if (err == nil) != (serr == nil) {
			t.Fatalf("Decrypt: %v; DecryptTo: %v", err, serr)
		}
		if err == nil && !bytes.Equal(plain, streamed.Bytes()) {
			t.Fatal("Decrypt and DecryptTo disagree on the plaintext")
		}
	})
}

// randomKey reports a CBC envelope whose key came by PKCS #1 v1.5: one that does not
// decrypt yields a random key rather than an error (so the padding check leaks
// nothing), and the CBC padding then holds by chance once in a few hundred tries.
func randomKey(info *DecryptInfo) bool {
	return info != nil && info.KeyTransport == RSAPKCS1v15 && info.Cipher != AES128GCM && info.Cipher != AES256GCM
}

// FuzzVerify: a signature that verifies binds its content: the same signature over
// other content fails.
func FuzzVerify(f *testing.F) {
	own := testIdentity(f, "fuzz-signer")
	trusted := []*x509.Certificate{own.cert}
	content := []byte("Content-Type: application/edi-x12\r\n\r\nISA*00*~")
	for _, d := range []DigestAlgorithm{SHA256, SHA512} {
		sig, err := SignDetached(content, own.cert, own.key, nil, d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sig, content)
	}
	pss, err := SignDetachedPSS(content, own.cert, own.key, nil, SHA384)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pss, content)
	// The forms read by tolerance or checked on the way: RFC 6211 protection, and
	// RSASSA-PSS without parameters as pyas2-lib writes it (SHA-256, salt 222).
	protected, err := SignDetachedWith(content, own.cert, own.key, nil, SHA256, SignOptions{AlgorithmProtection: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(protected, content)
	if rk, ok := own.key.(*rsa.PrivateKey); ok {
		f.Add(resignPSS(f, protected, rk, crypto.SHA256, 222), content)
	}
	for _, b := range berSeeds {
		f.Add(unhex(f, b), content)
	}
	opts := VerifyOptions{AllowSHA1: true}
	f.Fuzz(func(t *testing.T, sig, content []byte) {
		info, err := VerifyDetached(sig, content, trusted, opts)
		if err != nil {
			if !isClassified(err) {
				t.Fatalf("error of no class: %v", err)
			}
			return
		}
		if info == nil || info.Certificate == nil {
			t.Fatal("verified without naming the signer")
		}
		if _, err := VerifyDetached(sig, append(content[:len(content):len(content)], '!'), trusted, opts); err == nil {
			t.Fatal("the signature verifies other content too")
		}
	})
}
