package cms

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncryptDecryptRoundTrip(t *testing.T) {
	ours := testIdentity(t, "ours")
	content := randomBytes(t, 70000) // more than one read buffer
	tests := []struct {
		cipher ContentCipher
		kt     KeyTransport
		ski    bool
	}{
		{AES128CBC, RSAPKCS1v15, false},
		{AES192CBC, RSAPKCS1v15, false},
		{AES256CBC, RSAPKCS1v15, false},
		{AES256CBC, RSAOAEPSHA1, false},
		{AES256CBC, RSAOAEPSHA256, true},
		{AES128GCM, RSAPKCS1v15, false},
		{AES256GCM, RSAOAEPSHA256, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.cipher)+"/"+string(tt.kt), func(t *testing.T) {
			for _, size := range []int{0, 1, 15, 16, 17, len(content)} {
				env, err := Encrypt(content[:size], []*x509.Certificate{ours.cert},
					EncryptOptions{Cipher: tt.cipher, KeyTransport: tt.kt, SubjectKeyID: tt.ski})
				if err != nil {
					t.Fatal(err)
				}
				got, info, err := Decrypt(env, []Recipient{ours.recipient()})
				if err != nil {
					t.Fatalf("size %d: %v", size, err)
				}
				if !bytes.Equal(got, content[:size]) {
					t.Fatalf("size %d: content differs", size)
				}
				if info.Cipher != tt.cipher || info.KeyTransport != tt.kt || info.Recipient != 0 {
					t.Errorf("info %+v", info)
				}
			}
		})
	}
}

func TestDecryptRollover(t *testing.T) {
	old, next := testIdentity(t, "ours"), testIdentity(t, "ours-next")
	env, err := Encrypt([]byte("for the new key"), []*x509.Certificate{next.cert}, EncryptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, info, err := Decrypt(env, []Recipient{old.recipient(), next.recipient()})
	if err != nil || string(got) != "for the new key" || info.Recipient != 1 {
		t.Fatalf("Decrypt = %q, %+v, %v", got, info, err)
	}
}

func TestEncryptRefusesInboundOnlyCipher(t *testing.T) {
	ours := testIdentity(t, "ours")
	_, err := Encrypt([]byte("x"), []*x509.Certificate{ours.cert}, EncryptOptions{Cipher: DES3CBC})
	if !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Fatalf("3DES outbound: %v", err)
	}
}

func TestDecryptFailures(t *testing.T) {
	ours, other := testIdentity(t, "ours"), testIdentity(t, "other")
	content := []byte(strings.Repeat("invoice line\r\n", 100))
	cbc, err := Encrypt(content, []*x509.Certificate{ours.cert}, EncryptOptions{KeyTransport: RSAOAEPSHA256})
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := Encrypt(content, []*x509.Certificate{ours.cert}, EncryptOptions{Cipher: AES256GCM})
	if err != nil {
		t.Fatal(err)
	}
	tamperedGCM := bytes.Clone(gcm)
	tamperedGCM[len(tamperedGCM)-40] ^= 1 // in the ciphertext, before the tag
	wrongKey := Recipient{Certificate: ours.cert, Key: other.recipient().Key}
	tests := []struct {
		name       string
		data       []byte
		recipients []Recipient
	}{
		{"not our certificate", cbc, []Recipient{other.recipient()}},
		{"our certificate with another key", cbc, []Recipient{wrongKey}},
		{"no candidates", cbc, nil},
		{"truncated", cbc[:len(cbc)/2], []Recipient{ours.recipient()}},
		{"truncated in the header", cbc[:40], []Recipient{ours.recipient()}},
		{"garbage", randomBytes(t, 600), []Recipient{ours.recipient()}},
		{"empty", nil, []Recipient{ours.recipient()}},
		{"tampered GCM", tamperedGCM, []Recipient{ours.recipient()}},
		{"compressed data", mustCompress(t, content), []Recipient{ours.recipient()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decrypt(tt.data, tt.recipients)
			if !errors.Is(err, ErrDecryption) {
				t.Fatalf("Decrypt error = %v, want ErrDecryption", err)
			}
		})
	}
}

func mustCompress(t testing.TB, b []byte) []byte {
	c, err := Compress(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A CBC stream is written as it is decrypted, so a large message is never
// held whole: the writer sees data before the reader is drained.
func TestDecryptToStreams(t *testing.T) {
	ours := testIdentity(t, "ours")
	content := randomBytes(t, 1<<20)
	env, err := Encrypt(content, []*x509.Certificate{ours.cert}, EncryptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := &countingReader{r: bytes.NewReader(env)}
	w := &firstWriteWatcher{src: src}
	if _, err := DecryptTo(w, src, []Recipient{ours.recipient()}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.buf.Bytes(), content) {
		t.Fatal("content differs")
	}
	if w.readAtFirstWrite >= int64(len(env))/2 {
		t.Errorf("first plaintext written after %d of %d bytes were read", w.readAtFirstWrite, len(env))
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type firstWriteWatcher struct {
	src              *countingReader
	buf              bytes.Buffer
	readAtFirstWrite int64
	wrote            bool
}

func (f *firstWriteWatcher) Write(p []byte) (int, error) {
	if !f.wrote && len(p) > 0 {
		f.wrote, f.readAtFirstWrite = true, f.src.n
	}
	return f.buf.Write(p)
}

func TestCompressRoundTripAndLimit(t *testing.T) {
	content := []byte(strings.Repeat("000001;SKU-00007;Widget 1;1.01;EUR\r\n", 500))
	cd := mustCompress(t, content)
	got, err := Decompress(cd, int64(len(content)))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("Decompress = %d bytes, %v", len(got), err)
	}
	if k, err := Identify(cd); err != nil || k != KindCompressedData {
		t.Errorf("Identify = %q, %v", k, err)
	}

	bomb := mustCompress(t, make([]byte, 64<<20))
	if len(bomb) > 1<<20 {
		t.Fatalf("bomb is %d bytes", len(bomb))
	}
	_, err = Decompress(bomb, 1<<20)
	var le *DecompressionLimitError
	if !errors.As(err, &le) || le.Limit != 1<<20 || !errors.Is(err, ErrDecompression) {
		t.Fatalf("bomb: %v", err)
	}

	broken := bytes.Clone(cd)
	broken[len(broken)-10] ^= 0xff
	for name, data := range map[string][]byte{"corrupt zlib": broken, "truncated": cd[:len(cd)/2], "garbage": randomBytes(t, 300)} {
		if _, err := Decompress(data, 1<<20); !errors.Is(err, ErrDecompression) {
			t.Errorf("%s: %v, want ErrDecompression", name, err)
		}
	}
}

func TestSignVerify(t *testing.T) {
	content := []byte("Content-Type: application/edi-x12\r\n\r\nISA*00*...~")
	tests := []struct {
		identity string
		digest   DigestAlgorithm
		pss      bool
		scheme   SignatureScheme
	}{
		{"partner", SHA256, false, SchemePKCS1v15},
		{"partner", SHA384, false, SchemePKCS1v15},
		{"partner", SHA512, false, SchemePKCS1v15},
		{"partner", SHA256, true, SchemePSS},
		{"partner", SHA512, true, SchemePSS},
		{"ec-partner", SHA256, false, SchemeECDSA},
	}
	for _, tt := range tests {
		for _, protect := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/%s/protect=%v", tt.identity, tt.digest, tt.scheme, protect), func(t *testing.T) {
				id := testIdentity(t, tt.identity)
				sign := SignDetachedWith
				if tt.pss {
					sign = SignDetachedPSSWith
				}
				sig, err := sign(content, id.cert, id.key, nil, tt.digest, SignOptions{AlgorithmProtection: protect})
				if err != nil {
					t.Fatal(err)
				}
				info, err := VerifyDetached(sig, content, []*x509.Certificate{id.cert}, VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if info.Digest != tt.digest || info.Scheme != tt.scheme || info.AlgorithmProtection != protect || info.Certificate != id.cert ||
					len(info.Tolerances) != 0 {
					t.Errorf("info %+v", info)
				}
				if len(info.ReplayDigest) != 32 {
					t.Errorf("replay digest of %d bytes", len(info.ReplayDigest))
				}
				if time.Since(info.SigningTime) > time.Minute {
					t.Errorf("signing time %v", info.SigningTime)
				}
			})
		}
	}
}

func TestVerifyFailures(t *testing.T) {
	partner, other, expired := testIdentity(t, "partner"), testIdentity(t, "other"), testIdentity(t, "expired")
	content := []byte("the signed entity")
	sig, err := SignDetached(content, partner.cert, partner.key, nil, SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pss, err := SignDetachedPSS(content, partner.cert, partner.key, nil, SHA256)
	if err != nil {
		t.Fatal(err)
	}
	sha1Sig, err := SignDetached(content, partner.cert, partner.key, nil, SHA1)
	if err != nil {
		t.Fatal(err)
	}
	expiredSig, err := SignDetached(content, expired.cert, expired.key, nil, SHA256)
	if err != nil {
		t.Fatal(err)
	}
	flipLast := func(b []byte) []byte { b = bytes.Clone(b); b[len(b)-1] ^= 1; return b }
	trusted := []*x509.Certificate{partner.cert}
	tests := []struct {
		name    string
		sig     []byte
		content []byte
		trusted []*x509.Certificate
		opts    VerifyOptions
		want    error
	}{
		{"altered content", sig, []byte("the signed entitY"), trusted, VerifyOptions{}, ErrIntegrity},
		{"altered signature value", flipLast(sig), content, trusted, VerifyOptions{}, ErrAuthentication},
		{"altered PSS signature", flipLast(pss), content, trusted, VerifyOptions{}, ErrAuthentication},
		{"signer not trusted", sig, content, []*x509.Certificate{other.cert}, VerifyOptions{}, ErrAuthentication},
		{"no partner certificate", sig, content, nil, VerifyOptions{}, ErrAuthentication},
		{"SHA-1 not allowed", sha1Sig, content, trusted, VerifyOptions{}, ErrInsufficientSecurity},
		{"expired signer", expiredSig, content, []*x509.Certificate{expired.cert}, VerifyOptions{}, ErrAuthentication},
		{"before validity", sig, content, trusted, VerifyOptions{Time: time.Now().Add(-48 * time.Hour)}, ErrAuthentication},
		{"truncated", sig[:len(sig)/2], content, trusted, VerifyOptions{}, ErrAuthentication},
		{"garbage", randomBytes(t, 500), content, trusted, VerifyOptions{}, ErrAuthentication},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := VerifyDetached(tt.sig, tt.content, tt.trusted, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyDetached error = %v, want %v", err, tt.want)
			}
		})
	}

	info, err := VerifyDetached(sha1Sig, content, trusted, VerifyOptions{AllowSHA1: true})
	if err != nil || info.Digest != SHA1 {
		t.Errorf("SHA-1 allowed: %+v, %v", info, err)
	}
	_, err = VerifyDetached(expiredSig, content, []*x509.Certificate{expired.cert}, VerifyOptions{})
	var ve *CertificateValidityError
	if !errors.As(err, &ve) {
		t.Errorf("expired: %v, want a *CertificateValidityError", err)
	}
}

func TestParseDigestAlgorithm(t *testing.T) {
	for in, want := range map[string]DigestAlgorithm{
		"sha256": SHA256, "sha-256": SHA256, "SHA-256": SHA256, "SHA256": SHA256, "sha1": SHA1, "sha-1": SHA1, " sha-512 ": SHA512,
	} {
		if got, err := ParseDigestAlgorithm(in); err != nil || got != want {
			t.Errorf("ParseDigestAlgorithm(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"md5", "sha-224", "", "sha3-256"} {
		if _, err := ParseDigestAlgorithm(in); !errors.Is(err, ErrUnsupportedAlgorithm) {
			t.Errorf("ParseDigestAlgorithm(%q) error = %v", in, err)
		}
	}
	if SHA256.MICName() != "sha-256" || SHA1.MICName() != "sha-1" {
		t.Error("MICName")
	}
}
