package cms

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"testing"
)

func TestVerifyDigest(t *testing.T) {
	signer := testIdentity(t, "digest-signer")
	content := []byte("Content-Type: application/edi-x12\r\n\r\nISA*00~")
	sum := sha256.Sum256(content)
	other := sha256.Sum256([]byte("something else"))
	trusted := []*x509.Certificate{signer.cert}
	for _, pss := range []bool{false, true} {
		sign := SignDetached
		if pss {
			sign = SignDetachedPSS
		}
		sig, err := sign(content, signer.cert, signer.key, nil, SHA256)
		if err != nil {
			t.Fatal(err)
		}
		want, err := VerifyDetached(sig, content, trusted, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name    string
			digests map[DigestAlgorithm][]byte
			want    error
		}{
			{"right digest", map[DigestAlgorithm][]byte{SHA256: sum[:]}, nil},
			{"other content", map[DigestAlgorithm][]byte{SHA256: other[:]}, ErrIntegrity},
			{"digest not computed", map[DigestAlgorithm][]byte{SHA512: sum[:]}, ErrAuthentication},
		} {
			info, err := VerifyDigest(sig, c.digests, trusted, VerifyOptions{})
			if !errors.Is(err, c.want) || c.want == nil && err != nil {
				t.Errorf("pss %v, %s: error %v, want %v", pss, c.name, err, c.want)
				continue
			}
			if err == nil && (info.Digest != want.Digest || !bytes.Equal(info.ReplayDigest, want.ReplayDigest) || info.Scheme != want.Scheme) {
				t.Errorf("pss %v: signer %+v, want %+v", pss, info, want)
			}
		}
	}
}

// The issuer-and-serial signer identifier that products (and package pkcs7) write is
// verified from the digest too.
func TestVerifyDigestIssuerAndSerial(t *testing.T) {
	signer := testIdentity(t, "digest-signer")
	content := []byte("issuer and serial")
	sig := pkcs7Sign(t, content, signer.cert, signer.key, nil, SHA256, false)
	sum := sha256.Sum256(content)
	if _, err := VerifyDigest(sig, map[DigestAlgorithm][]byte{SHA256: sum[:]}, []*x509.Certificate{signer.cert}, VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	sum[0] ^= 1
	if _, err := VerifyDigest(sig, map[DigestAlgorithm][]byte{SHA256: sum[:]}, []*x509.Certificate{signer.cert}, VerifyOptions{}); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("altered digest: %v, want ErrIntegrity", err)
	}
}

func TestDecryptToBoundedRefusesLargeGCM(t *testing.T) {
	ours := testIdentity(t, "gcm-recipient")
	env, err := Encrypt(make([]byte, 4096), []*x509.Certificate{ours.cert}, EncryptOptions{Cipher: AES256GCM})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err = DecryptToBounded(&out, bytes.NewReader(env), []Recipient{ours.recipient()}, 1024)
	var size *AEADSizeError
	if !errors.As(err, &size) || size.Limit != 1024 || !errors.Is(err, ErrDecryption) || out.Len() != 0 {
		t.Fatalf("error %v, %d bytes written; want the bound of 1024 bytes", err, out.Len())
	}
	if _, err := DecryptToBounded(&out, bytes.NewReader(env), []Recipient{ours.recipient()}, 4096); err != nil || out.Len() != 4096 {
		t.Fatalf("at the bound: %v, %d bytes", err, out.Len())
	}
}
