package mime

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"wharf/internal/protocol/as2/cms"
)

// buildCase is a choice of protection and the layers a receiver finds.
type buildCase struct {
	name   string
	opts   BuildOptions
	layers []Layer
}

// buildCases are the protections a message can have; ours is the receiver, partner the
// signer.
func buildCases(ours, partner identity) []buildCase {
	return []buildCase{
		{"plain", BuildOptions{}, nil},
		{"compressed", BuildOptions{Compress: true}, []Layer{LayerCompressed}},
		{"signed", BuildOptions{Sign: partner.signer(cms.SHA256)}, []Layer{LayerSigned}},
		{"signed pss", BuildOptions{Sign: &Signer{Certificate: partner.cert, Key: partner.key, Digest: cms.SHA384, PSS: true}}, []Layer{LayerSigned}},
		{"signed with algorithm protection", BuildOptions{Sign: &Signer{Certificate: partner.cert, Key: partner.key, Digest: cms.SHA256, AlgorithmProtection: true}}, []Layer{LayerSigned}},
		{"signed pss with algorithm protection", BuildOptions{Sign: &Signer{Certificate: partner.cert, Key: partner.key, Digest: cms.SHA512, PSS: true, AlgorithmProtection: true}}, []Layer{LayerSigned}},
		{"encrypted", BuildOptions{Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert}}}, []Layer{LayerEncrypted}},
		{"everything", BuildOptions{
			Compress: true, Sign: partner.signer(cms.SHA512),
			Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert}, EncryptOptions: cms.EncryptOptions{KeyTransport: cms.RSAOAEPSHA256}},
		}, []Layer{LayerEncrypted, LayerSigned, LayerCompressed}},
		{"gcm", BuildOptions{
			Sign:    partner.signer(cms.SHA256),
			Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert}, EncryptOptions: cms.EncryptOptions{Cipher: cms.AES256GCM}},
		}, []Layer{LayerEncrypted, LayerSigned}},
		{"unsigned compressed encrypted", BuildOptions{
			Compress: true, Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert}}, MICAlgorithm: cms.SHA384,
		}, []Layer{LayerEncrypted, LayerCompressed}},
		{"compressed after signing", BuildOptions{Compress: true, CompressAfterSigning: true, Sign: partner.signer(cms.SHA384)},
			[]Layer{LayerCompressed, LayerSigned}},
		{"everything, compressed after signing", BuildOptions{
			Compress: true, CompressAfterSigning: true, Sign: partner.signer(cms.SHA256), MICAlgorithm: cms.SHA512,
			Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert}},
		}, []Layer{LayerEncrypted, LayerCompressed, LayerSigned}},
		{"compressed after signing, unsigned", BuildOptions{Compress: true, CompressAfterSigning: true},
			[]Layer{LayerCompressed}},
	}
}

func TestBuildUnpackRoundTrip(t *testing.T) {
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	payload := []byte(strings.Repeat("ISA*00*          *00*~\r\n", 300))
	for _, tt := range buildCases(ours, partner) {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.ContentType = "application/edi-x12"
			built, err := Build(payload, "order 850.edi", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkUnpacked(t, ours, partner, tt, built.ContentType, built.Header, built.Body, payload, built.MICs)
		})
	}
}

// checkUnpacked unpacks a built body as our receiver does and checks the payload, the
// layers, the signature's options and the MIC against what the sender expects.
func checkUnpacked(t *testing.T, ours, partner identity, tt buildCase, contentType string, h http.Header, body, payload []byte, mics MICs) {
	t.Helper()
	header := h.Clone()
	header.Set("Disposition-Notification-Options", "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, "+mics.MIC.Algorithm.MICName())
	res, err := Unpack(contentType, header, body, UnpackOptions{
		Decryption:          []cms.Recipient{ours.recipient()},
		PartnerCertificates: []*x509.Certificate{partner.cert},
		MaxDecompressedSize: int64(len(payload)) + 1<<20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Payload, payload) || res.FileName != "order 850.edi" || res.ContentType != "application/edi-x12" {
		t.Errorf("payload %d bytes, file name %q, type %q", len(res.Payload), res.FileName, res.ContentType)
	}
	if !slices.Equal(res.Layers, tt.layers) {
		t.Errorf("layers %v, want %v", res.Layers, tt.layers)
	}
	if tt.opts.Sign != nil && res.Signer.AlgorithmProtection != tt.opts.Sign.AlgorithmProtection {
		t.Errorf("algorithm protection %v, want %v", res.Signer.AlgorithmProtection, tt.opts.Sign.AlgorithmProtection)
	}
	if !res.MIC.Equal(mics.MIC) || !MatchMIC(res.MIC, mics.ExpectedMICs) {
		t.Errorf("receiver MIC %s, sender expects %s", res.MIC, mics.MIC)
	}
}

func TestUnpackHTTPLevelHeaders(t *testing.T) {
	// Neither signed nor encrypted: the HTTP header fields describe the
	// payload, including a base64 transfer encoding.
	header := http.Header{}
	header.Set("Content-Transfer-Encoding", "base64")
	header.Set("Content-Disposition", `attachment; filename="../../etc/passwd"`)
	res, err := Unpack("text/plain", header, []byte("aGVsbG8g\r\nd29ybGQ=\r\n"), UnpackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Payload) != "hello world" || res.FileName != "passwd" || res.RawFileName != "../../etc/passwd" {
		t.Errorf("payload %q, file name %q", res.Payload, res.FileName)
	}
	if want := ComputeMIC([]byte("hello world"), cms.SHA256); !res.MIC.Equal(want) {
		t.Errorf("MIC %s, want %s", res.MIC, want)
	}
}

func TestUnpackTolerance(t *testing.T) {
	partner := testIdentity(t, "partner")
	entity := []byte("content-type: application/EDI-X12\r\nCONTENT-DISPOSITION: attachment;\r\n\tfilename=\"folded.edi\"\r\n\r\nUNB+UNOA:1'\r\n")
	sig, err := cms.SignDetached(entity, partner.cert, partner.key, nil, cms.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	// A binary signature part, a preamble, LF line endings around the
	// parts and an oddly cased, folded Content-Type.
	body := "This is a preamble.\n--XyZ\n" + string(entity) + "\n--XyZ\ncontent-type: application/x-pkcs7-signature\ncontent-transfer-encoding: binary\n\n" +
		string(sig) + "\n--XyZ--\n"
	res, err := Unpack("Multipart/Signed; protocol=\"application/x-pkcs7-signature\";\r\n micalg=SHA256; boundary=XyZ", http.Header{}, []byte(body),
		UnpackOptions{PartnerCertificates: []*x509.Certificate{partner.cert}})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Payload) != "UNB+UNOA:1'\r\n" || res.FileName != "folded.edi" || !bytes.Equal(res.SignedContent, entity) {
		t.Errorf("payload %q, file name %q", res.Payload, res.FileName)
	}
}

func TestUnpackLFConvertedSignedText(t *testing.T) {
	partner := testIdentity(t, "partner")
	entity := []byte("Content-Type: text/plain\r\n\r\nline one\r\nline two\r\n")
	sig, err := cms.SignDetached(entity, partner.cert, partner.key, nil, cms.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	lf := strings.ReplaceAll(string(entity), "\r\n", "\n")
	body := "--b\n" + lf + "\n--b\nContent-Type: application/pkcs7-signature\nContent-Transfer-Encoding: base64\n\n" +
		string(base64Lines(sig)) + "--b--\n"
	res, err := Unpack(`multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; boundary=b`, http.Header{}, []byte(body),
		UnpackOptions{PartnerCertificates: []*x509.Certificate{partner.cert}})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Payload) != "line one\r\nline two\r\n" || !bytes.Equal(res.SignedContent, entity) {
		t.Errorf("payload %q", res.Payload)
	}
}

func TestUnpackFailures(t *testing.T) {
	ours, partner, other := testIdentity(t, "ours"), testIdentity(t, "partner"), testIdentity(t, "other")
	payload := []byte(strings.Repeat("0123456789", 1000))
	build := func(opts BuildOptions) *Built {
		b, err := Build(payload, "x.bin", opts)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	enc := &Encryption{Recipients: []*x509.Certificate{ours.cert}}
	signedEnc := build(BuildOptions{Sign: partner.signer(cms.SHA256), Encrypt: enc})
	signedOnly := build(BuildOptions{Sign: partner.signer(cms.SHA256)})
	sha1Signed := build(BuildOptions{Sign: partner.signer(cms.SHA1)})
	compressed := build(BuildOptions{Compress: true})

	tamperedContent := bytes.Replace(signedOnly.Body, []byte("0123456789"), []byte("0123456780"), 1)
	// The signature value ends the DER: flip its last byte.
	_, params, _ := parseMediaType(signedOnly.ContentType)
	parts, err := splitMultipart(signedOnly.Body, params["boundary"])
	if err != nil {
		t.Fatal(err)
	}
	sigEntity, _ := ParseEntity(parts[1])
	sig, _ := sigEntity.Content()
	sig[len(sig)-1] ^= 1
	tamperedSig := []byte("--" + params["boundary"] + "\r\n" + string(parts[0]) + "\r\n--" + params["boundary"] +
		"\r\nContent-Type: application/pkcs7-signature\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		string(base64Lines(sig)) + "--" + params["boundary"] + "--\r\n")

	opts := UnpackOptions{
		Decryption:          []cms.Recipient{ours.recipient()},
		PartnerCertificates: []*x509.Certificate{partner.cert},
		MaxDecompressedSize: 5000,
	}
	tests := []struct {
		name  string
		ct    string
		body  []byte
		opts  UnpackOptions
		want  error
		layer []Layer
	}{
		{"wrong key", signedEnc.ContentType, signedEnc.Body, UnpackOptions{Decryption: []cms.Recipient{other.recipient()}}, cms.ErrDecryption, []Layer{LayerEncrypted}},
		{"truncated envelope", signedEnc.ContentType, signedEnc.Body[:len(signedEnc.Body)/2], opts, cms.ErrDecryption, []Layer{LayerEncrypted}},
		{"garbage envelope", signedEnc.ContentType, []byte("garbage garbage garbage"), opts, cms.ErrDecryption, []Layer{LayerEncrypted}},
		{"tampered content", signedOnly.ContentType, tamperedContent, opts, cms.ErrIntegrity, []Layer{LayerSigned}},
		{"tampered signature", signedOnly.ContentType, tamperedSig, opts, cms.ErrAuthentication, []Layer{LayerSigned}},
		{"unknown signer", signedOnly.ContentType, signedOnly.Body, UnpackOptions{PartnerCertificates: []*x509.Certificate{other.cert}}, cms.ErrAuthentication, []Layer{LayerSigned}},
		{"sha-1 not allowed", sha1Signed.ContentType, sha1Signed.Body, opts, cms.ErrInsufficientSecurity, []Layer{LayerSigned}},
		{"decompression bomb", compressed.ContentType, compressed.Body, opts, cms.ErrDecompression, []Layer{LayerCompressed}},
		{"truncated multipart", signedOnly.ContentType, signedOnly.Body[:len(signedOnly.Body)-40], opts, ErrMalformed, nil},
		{"bad transfer encoding", "application/pkcs7-mime; smime-type=enveloped-data", []byte("x"), opts, ErrTransferEncoding, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := http.Header{}
			if tt.name == "bad transfer encoding" {
				header.Set("Content-Transfer-Encoding", "x-uuencode")
			}
			res, err := Unpack(tt.ct, header, tt.body, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Unpack error = %v, want %v", err, tt.want)
			}
			if !slices.Equal(res.Layers, tt.layer) {
				t.Errorf("layers %v, want %v", res.Layers, tt.layer)
			}
		})
	}

	// The SHA-1 refusal still reports the signer's digest for the MDN.
	res, err := Unpack(sha1Signed.ContentType, http.Header{}, sha1Signed.Body, opts)
	if !errors.Is(err, cms.ErrInsufficientSecurity) || res.Signer == nil || res.Signer.Digest != cms.SHA1 {
		t.Errorf("SHA-1 refusal: %+v, %v", res.Signer, err)
	}
	var le *cms.DecompressionLimitError
	if _, err := Unpack(compressed.ContentType, http.Header{}, compressed.Body, opts); !errors.As(err, &le) {
		t.Errorf("bomb: %v, want a *cms.DecompressionLimitError", err)
	}
}

func TestChooseMIC(t *testing.T) {
	tests := []struct {
		options  string
		pref     MICPreference
		signer   cms.DigestAlgorithm
		want     cms.DigestAlgorithm
		wantName string
	}{
		{"signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256", MICRequested, cms.SHA1, cms.SHA256, "sha-256"},
		{"signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha256", MICSignatureDigest, cms.SHA1, cms.SHA1, "sha-1"},
		{"signed-receipt-micalg=required, md5, sha384, sha-256", MICRequested, cms.SHA256, cms.SHA384, "sha384"},
		{"signed-receipt-micalg=optional, md5", MICRequested, cms.SHA512, cms.SHA512, "sha-512"},
		{"", MICRequested, "", cms.SHA256, "sha-256"},
		{"Signed-Receipt-MICalg = optional , SHA1", MICRequested, "", cms.SHA1, "SHA1"},
	}
	for _, tt := range tests {
		alg, name := chooseMIC(tt.pref, ParseDispositionOptions(tt.options), tt.signer)
		m := MIC{Algorithm: alg, Name: name}
		if alg != tt.want || m.AlgorithmName() != tt.wantName {
			t.Errorf("%q: %s (%q), want %s (%q)", tt.options, alg, m.AlgorithmName(), tt.want, tt.wantName)
		}
	}
	o := ParseDispositionOptions("signed-receipt-protocol=required, pkcs7-signature; signed-receipt-micalg=optional, sha-256")
	if !o.SignedReceipt() || o.ProtocolImportance != "required" || o.MICImportance != "optional" {
		t.Errorf("options %+v", o)
	}
}

func TestMICFormat(t *testing.T) {
	m := ComputeMIC([]byte("abc"), cms.SHA256)
	if got := m.String(); got != "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=, sha-256" {
		t.Errorf("MIC %q", got)
	}
	p, err := ParseMIC(" ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0= , SHA256")
	if err != nil || !p.Equal(m) || p.Name != "SHA256" {
		t.Errorf("ParseMIC = %+v, %v", p, err)
	}
	for _, bad := range []string{"", "abc", "AAAA, sha-256", "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=, md5"} {
		if _, err := ParseMIC(bad); err == nil {
			t.Errorf("ParseMIC(%q) accepted", bad)
		}
	}
}

// BuildFrom reads the payload in whatever pieces the reader gives and whatever length the
// caller guessed, and builds what Build builds, with the MICs for every algorithm asked
// for, although it keeps neither the MIC content nor a CBC envelope.
func TestBuildFromMatchesBuild(t *testing.T) {
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	payload := bytes.Repeat([]byte("UNB+UNOC:3+SENDER+RECEIVER'\r\n"), 7000)
	payload = append(payload, make([]byte, 3333)...)
	enc := &Encryption{Recipients: []*x509.Certificate{ours.cert}}
	tests := []struct {
		name string
		opts BuildOptions
	}{
		{"plain", BuildOptions{}},
		{"compressed", BuildOptions{Compress: true}},
		{"signed", BuildOptions{Sign: partner.signer(cms.SHA256)}},
		{"encrypted", BuildOptions{Encrypt: enc}},
		{"compressed encrypted", BuildOptions{Compress: true, Encrypt: enc, MICAlgorithm: cms.SHA512}},
		{"signed encrypted", BuildOptions{Sign: partner.signer(cms.SHA384), Encrypt: enc}},
		{"everything", BuildOptions{Compress: true, Sign: partner.signer(cms.SHA512), Encrypt: enc, MICAlgorithm: cms.SHA256}},
		{"gcm", BuildOptions{Sign: partner.signer(cms.SHA256), Encrypt: &Encryption{Recipients: enc.Recipients, EncryptOptions: cms.EncryptOptions{Cipher: cms.AES128GCM}}}},
	}
	for _, tt := range tests {
		for _, hint := range []int64{int64(len(payload)), 0, 1000, 3 * int64(len(payload))} {
			t.Run(fmt.Sprintf("%s/size %d", tt.name, hint), func(t *testing.T) {
				opts := tt.opts
				opts.newBoundary = fixedBoundary()
				want, err := Build(payload, "x.edi", opts)
				if err != nil {
					t.Fatal(err)
				}
				opts.newBoundary = fixedBoundary()
				opts.MICAlgorithms = cms.DigestAlgorithms
				got, err := BuildFrom(iotest.HalfReader(bytes.NewReader(payload)), hint, "x.edi", opts)
				if err != nil {
					t.Fatal(err)
				}
				if got.ContentType != want.ContentType || !reflect.DeepEqual(got.Header, want.Header) {
					t.Errorf("Content-Type %q, header %v; want %q, %v", got.ContentType, got.Header, want.ContentType, want.Header)
				}
				streamed := opts.Encrypt != nil && !opts.Encrypt.Cipher.AEAD()
				if (got.Body == nil) != streamed || got.MICContent != nil {
					t.Errorf("body held: %v, MIC content held: %v", got.Body != nil, got.MICContent != nil)
				}
				if !got.MIC.Equal(want.MIC) || len(got.ExpectedMICs) != len(want.ExpectedMICs) {
					t.Errorf("MIC %s, expected %v; want %s, %v", got.MIC, got.ExpectedMICs, want.MIC, want.ExpectedMICs)
				}
				for _, alg := range cms.DigestAlgorithms {
					if m, ok := got.MICWith(alg); !ok || !m.Equal(ComputeMIC(want.MICContent, alg)) {
						t.Errorf("%s MIC %s (%v), want one over Build's MIC content", alg, m, ok)
					}
				}
				var body bytes.Buffer
				if err := got.WriteBody(&body); err != nil {
					t.Fatal(err)
				}
				if int64(body.Len()) != got.BodySize() {
					t.Errorf("wrote %d bytes, announced %d", body.Len(), got.BodySize())
				}
				header := got.Header.Clone()
				header.Set("Disposition-Notification-Options", "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, "+got.MIC.Algorithm.MICName())
				res, err := Unpack(got.ContentType, header, body.Bytes(), UnpackOptions{
					Decryption:          []cms.Recipient{ours.recipient()},
					PartnerCertificates: []*x509.Certificate{partner.cert},
				})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(res.Payload, payload) || !res.MIC.Equal(got.MIC) {
					t.Errorf("payload %d bytes, MIC %s; want %d bytes, %s", len(res.Payload), res.MIC, len(payload), got.MIC)
				}
			})
		}
	}
}

func TestLayerBuf(t *testing.T) {
	l := newLayerBuf(4, 3, 2)
	l.write([]byte("abc"))
	l.prepend([]byte("12"))
	l.write([]byte("de"))
	l.prepend([]byte("long header ")) // more than the room before
	l.write([]byte(strings.Repeat("x", 100)))
	if want := "long header 12abcde" + strings.Repeat("x", 100); string(l.bytes()) != want {
		t.Fatalf("%q, want %q", l.bytes(), want)
	}
	var seen bytes.Buffer
	l = newLayerBuf(0, 0, 0)
	if err := l.readFrom(iotest.OneByteReader(strings.NewReader("grows from nothing")), &seen); err != nil {
		t.Fatal(err)
	}
	if string(l.bytes()) != "grows from nothing" || seen.String() != "grows from nothing" {
		t.Errorf("read %q, hashed %q", l.bytes(), seen.String())
	}
	if err := newLayerBuf(0, 10, 0).readFrom(iotest.ErrReader(errors.New("disk gone")), io.Discard); err == nil {
		t.Error("a read error was not reported")
	}
}

// TestCompressAfterSigningMIC holds the MIC of a message compressed after signing to the
// one of the same message signed only (RFC 5402: the MIC covers what the signature
// covers, the document's entity), and apart from the one compressed before signing (which
// covers the compressed entity).
func TestCompressAfterSigningMIC(t *testing.T) {
	partner := testIdentity(t, "partner")
	payload := []byte(strings.Repeat("UNH+1+ORDERS:D:96A:UN'\r\n", 100))
	build := func(opts BuildOptions) *Built {
		t.Helper()
		opts.Sign = partner.signer(cms.SHA256)
		b, err := Build(payload, "orders.edi", opts)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	signedOnly := build(BuildOptions{})
	after := build(BuildOptions{Compress: true, CompressAfterSigning: true})
	before := build(BuildOptions{Compress: true})
	if !after.MIC.Equal(signedOnly.MIC) || !bytes.Equal(after.MICContent, signedOnly.MICContent) {
		t.Errorf("compressed after signing: MIC %s, want the signed-only message's %s", after.MIC, signedOnly.MIC)
	}
	if before.MIC.Equal(after.MIC) {
		t.Error("compressed before signing: the MIC must cover the compressed entity, not the document's")
	}
	if !strings.Contains(after.ContentType, "compressed-data") || !strings.Contains(before.ContentType, "multipart/signed") {
		t.Errorf("outer layers %q (after), %q (before)", after.ContentType, before.ContentType)
	}
}
