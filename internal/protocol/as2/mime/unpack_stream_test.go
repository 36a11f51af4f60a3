package mime

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
)

// sameResult fails the test where UnpackStream's result differs from Unpack's.
func sameResult(t *testing.T, mem *Result, streamed *Result, payload []byte) {
	t.Helper()
	if !bytes.Equal(payload, mem.Payload) {
		t.Errorf("streamed payload: %d bytes, want %d", len(payload), len(mem.Payload))
	}
	if streamed.PayloadSize != int64(len(mem.Payload)) {
		t.Errorf("PayloadSize %d, want %d", streamed.PayloadSize, len(mem.Payload))
	}
	if streamed.FileName != mem.FileName || streamed.ContentType != mem.ContentType {
		t.Errorf("file name %q, content type %q; want %q, %q", streamed.FileName, streamed.ContentType, mem.FileName, mem.ContentType)
	}
	if !slices.Equal(streamed.Layers, mem.Layers) {
		t.Errorf("layers %v, want %v", streamed.Layers, mem.Layers)
	}
	if streamed.MIC.String() != mem.MIC.String() {
		t.Errorf("MIC %q, want %q", streamed.MIC, mem.MIC)
	}
	if !slices.Equal(streamed.Tolerances(), mem.Tolerances()) {
		t.Errorf("tolerances %q, want %q", streamed.Tolerances(), mem.Tolerances())
	}
	if (streamed.Signer == nil) != (mem.Signer == nil) ||
		streamed.Signer != nil && (streamed.Signer.Digest != mem.Signer.Digest || !bytes.Equal(streamed.Signer.ReplayDigest, mem.Signer.ReplayDigest)) {
		t.Errorf("signer %+v, want %+v", streamed.Signer, mem.Signer)
	}
	if (streamed.Decryption == nil) != (mem.Decryption == nil) || streamed.Decryption != nil && streamed.Decryption.Cipher != mem.Decryption.Cipher {
		t.Errorf("decryption %+v, want %+v", streamed.Decryption, mem.Decryption)
	}
}

// unpackStream opens body with UnpackStream, reading it a few bytes at a time so every
// boundary of every layer falls across reads.
func unpackStream(contentType string, header http.Header, body []byte, opts UnpackOptions) (*Result, []byte, error) {
	var out bytes.Buffer
	res, err := UnpackStream(contentType, header, iotest.HalfReader(bytes.NewReader(body)), &out, opts)
	return res, out.Bytes(), err
}

func TestUnpackStreamCorpus(t *testing.T) {
	dir, cases := loadCorpus(t)
	ourCert := as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/gogw.crt"))
	ourKey := as2test.PEMPrivateKey(t, as2test.CorpusFile(t, dir, "keys/gogw.key"))
	n := 0
	for _, c := range cases {
		if c.Group != "inbound" {
			continue
		}
		t.Run(filepath.Base(c.ID), func(t *testing.T) {
			header := as2test.CorpusHeader(t, dir, c.Files["request_headers"])
			body := as2test.CorpusFile(t, dir, c.Files["request_body"])
			for _, pref := range []MICPreference{MICRequested, MICSignatureDigest} {
				opts := UnpackOptions{
					Decryption:          []cms.Recipient{{Certificate: ourCert, Key: ourKey.(crypto.Decrypter)}},
					PartnerCertificates: []*x509.Certificate{as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, c.SenderCertificate))},
					AllowSHA1:           true,
					VerifyTime:          corpusTime,
					MICPreference:       pref,
				}
				mem, err := Unpack(header.Get("Content-Type"), header, body, opts)
				if err != nil {
					t.Fatalf("Unpack: %v", err)
				}
				res, payload, err := unpackStream(header.Get("Content-Type"), header, body, opts)
				if err != nil {
					t.Fatalf("UnpackStream: %v", err)
				}
				sameResult(t, mem, res, payload)
				if c.Expected.MICAlgorithmConflict != nil && mem.Signer != nil {
					if got, want := res.MICWith(mem.Signer.Digest), mem.MICWith(mem.Signer.Digest); got.String() != want.String() {
						t.Errorf("MIC with the signature's digest %q, want %q", got, want)
					}
				}
			}
			n++
		})
	}
	if n != 36 {
		t.Errorf("%d inbound cases, want 36", n)
	}
}

func TestUnpackStreamBuilt(t *testing.T) {
	ours, partner := testIdentity(t, "stream-ours"), testIdentity(t, "stream-partner")
	enc := func(c cms.ContentCipher) *Encryption {
		return &Encryption{Recipients: []*x509.Certificate{ours.cert}, EncryptOptions: cms.EncryptOptions{Cipher: c}}
	}
	doc := bytes.Repeat([]byte("UNB+UNOA:1+SENDER+RECEIVER'\r\nLIN+1++4000862141404:SRS'\n"), 3000)
	for name, o := range map[string]BuildOptions{
		"plain":                    {},
		"compressed":               {Compress: true},
		"signed":                   {Sign: partner.signer(cms.SHA256)},
		"signed sha512 mic sha256": {Sign: partner.signer(cms.SHA512), MICAlgorithm: cms.SHA256},
		"encrypted":                {Encrypt: enc(cms.AES256CBC)},
		"compressed signed gcm":    {Compress: true, Sign: partner.signer(cms.SHA384), Encrypt: enc(cms.AES128GCM)},
		"compressed signed cbc":    {Compress: true, Sign: partner.signer(cms.SHA256), Encrypt: enc(cms.AES256CBC)},
		"signed then compressed":   {Compress: true, CompressAfterSigning: true, Sign: partner.signer(cms.SHA256), Encrypt: enc(cms.AES192CBC)},
		"compressed and encrypted": {Compress: true, Encrypt: enc(cms.AES128CBC)},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Build(doc, "order.edi", o)
			if err != nil {
				t.Fatal(err)
			}
			opts := UnpackOptions{
				Decryption:          []cms.Recipient{ours.recipient()},
				PartnerCertificates: []*x509.Certificate{partner.cert},
				MICPreference:       MICRequested,
			}
			header := b.Header.Clone()
			header.Set("Disposition-Notification-Options", "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256")
			mem, err := Unpack(b.ContentType, header, b.Body, opts)
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			res, payload, err := unpackStream(b.ContentType, header, b.Body, opts)
			if err != nil {
				t.Fatalf("UnpackStream: %v", err)
			}
			sameResult(t, mem, res, payload)
		})
	}
}

func TestUnpackStreamRefusals(t *testing.T) {
	ours, partner, stranger := testIdentity(t, "stream-ours"), testIdentity(t, "stream-partner"), testIdentity(t, "stream-stranger")
	enc := func(c cms.ContentCipher) *Encryption {
		return &Encryption{Recipients: []*x509.Certificate{ours.cert}, EncryptOptions: cms.EncryptOptions{Cipher: c}}
	}
	zeros := make([]byte, 8<<20)
	for _, c := range []struct {
		name  string
		doc   []byte
		build BuildOptions
		opts  UnpackOptions
		want  error
	}{
		{"gcm past its bound", zeros[:2<<20], BuildOptions{Encrypt: enc(cms.AES256GCM)}, UnpackOptions{MaxAEADSize: 1 << 20}, &cms.AEADSizeError{}},
		{"bomb", zeros, BuildOptions{Compress: true}, UnpackOptions{MaxDecompressionRatio: 10}, cms.ErrDecompression},
		{"past the size limit", zeros, BuildOptions{Compress: true, Encrypt: enc(cms.AES128CBC)}, UnpackOptions{MaxDecompressedSize: 4 << 20, MaxDecompressionRatio: 1 << 20}, cms.ErrDecompression},
		{"unknown signer", zeros[:1000], BuildOptions{Sign: stranger.signer(cms.SHA256), Encrypt: enc(cms.AES128CBC)}, UnpackOptions{}, cms.ErrAuthentication},
		{"unsigned while required", zeros[:1000], BuildOptions{Compress: true, Encrypt: enc(cms.AES128CBC)}, UnpackOptions{RequireSigned: true}, cms.ErrInsufficientSecurity},
		{"not ours", zeros[:1000], BuildOptions{Encrypt: &Encryption{Recipients: []*x509.Certificate{stranger.cert}}}, UnpackOptions{}, cms.ErrDecryption},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Build(c.doc, "a.bin", c.build)
			if err != nil {
				t.Fatal(err)
			}
			c.opts.Decryption = []cms.Recipient{ours.recipient()}
			c.opts.PartnerCertificates = []*x509.Certificate{partner.cert}
			_, _, err = unpackStream(b.ContentType, b.Header, b.Body, c.opts)
			var size *cms.AEADSizeError
			if _, ok := c.want.(*cms.AEADSizeError); ok {
				if !errors.As(err, &size) || size.Limit != 1<<20 || !errors.Is(err, cms.ErrDecryption) {
					t.Fatalf("error %v, want the AES-GCM bound of 1 MiB", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
}

// diskFull fails every write.
type diskFull struct{}

func (diskFull) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestUnpackStreamSinkFailureIsIO(t *testing.T) {
	ours := testIdentity(t, "stream-ours")
	b, err := Build(make([]byte, 1<<20), "a.bin", BuildOptions{Compress: true, Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = UnpackStream(b.ContentType, b.Header, bytes.NewReader(b.Body), diskFull{}, UnpackOptions{Decryption: []cms.Recipient{ours.recipient()}})
	if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v, want ErrIO naming the failure", err)
	}
}

// A signed part whose line endings a transport turned into bare LFs fails on its
// digest; the caller opens the message again with CanonicalLineEnds, as Unpack does in
// one call.
func TestUnpackStreamCanonicalRetry(t *testing.T) {
	partner := testIdentity(t, "stream-partner")
	b, err := Build([]byte("line one\r\nline two\r\n"), "a.txt", BuildOptions{ContentType: "text/plain", Sign: partner.signer(cms.SHA256)})
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := parseMediaType(b.ContentType)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := splitMultipart(b.Body, params["boundary"])
	if err != nil {
		t.Fatal(err)
	}
	lf := bytes.Replace(b.Body, parts[0], bytes.ReplaceAll(parts[0], []byte("\r\n"), []byte("\n")), 1)
	opts := UnpackOptions{PartnerCertificates: []*x509.Certificate{partner.cert}}
	mem, err := Unpack(b.ContentType, b.Header, lf, opts)
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	res, _, err := unpackStream(b.ContentType, b.Header, lf, opts)
	if !errors.Is(err, cms.ErrIntegrity) || !res.RetryCanonical {
		t.Fatalf("error %v, RetryCanonical %v; want an integrity failure to retry", err, res.RetryCanonical)
	}
	opts.CanonicalLineEnds = true
	res, payload, err := unpackStream(b.ContentType, b.Header, lf, opts)
	if err != nil {
		t.Fatalf("canonical: %v", err)
	}
	sameResult(t, mem, res, payload)
}

func TestPartScannerMatchesSplitMultipart(t *testing.T) {
	for _, body := range []string{
		"--b\r\nA\r\n--b\r\nB\r\n--b--\r\n",
		"preamble\r\n--b\r\nA\r\n--b\r\nB\r\n--b--",
		"--b\nA\n--b\nB\n--b--\nepilogue",
		"--b\r\n\r\n--b\r\n\r\n--b--",
		"--b\r\nA\r\n--bc\r\nstill A\r\n--b \t\r\nB\r\n--b--",
		"--b\r\nA--b\r\n\r\n--b\r\nB\r\r\n--b--",
		"--b\r\n" + strings.Repeat("x\r\n-", 5000) + "\r\n--b\r\nB\r\n--b--",
		"--b\r\nA\r\n--b\r\nB",
		"no delimiter at all",
		"--b\r\nA\r\n--b",
	} {
		want, wantErr := splitMultipart([]byte(body), "b")
		got, err := scanParts(body, "b")
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%q: error %v, want %v", body, err, wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%q: error %v, want ErrMalformed", body, err)
			}
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%q: %d parts, want %d", body, len(got), len(want))
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%q: part %d %q, want %q", body, i, got[i], want[i])
			}
		}
	}
}

// scanParts reads every part of body with a partScanner, a byte at a time.
func scanParts(body, boundary string) ([][]byte, error) {
	s, err := newPartScanner(iotest.OneByteReader(strings.NewReader(body)), boundary)
	if err != nil {
		return nil, err
	}
	var parts [][]byte
	for {
		ok, err := s.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return parts, nil
		}
		p, err := io.ReadAll(s)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
}
