package cms

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/smallstep/pkcs7"
)

// signWithProtection makes a detached PKCS #1 v1.5 signature through pkcs7
// whose RFC 6211 attribute carries protection as given.
func signWithProtection(t *testing.T, content []byte, id identity, digest DigestAlgorithm, protection []byte) []byte {
	t.Helper()
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		t.Fatal(err)
	}
	sd.SetDigestAlgorithm(digest.oid())
	if err := sd.AddSigner(id.cert, id.key, pkcs7.SignerInfoConfig{ExtraSignedAttributes: []pkcs7.Attribute{
		{Type: oidAttrAlgorithmProtec, Value: asn1.RawValue{FullBytes: protection}},
	}}); err != nil {
		t.Fatal(err)
	}
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// An RFC 6211 attribute that names other algorithms than the SignerInfo is
// an integrity failure: the unsigned identifiers changed after signing.
func TestAlgorithmProtectionMismatch(t *testing.T) {
	partner := testIdentity(t, "partner")
	content := []byte("Content-Type: application/edi-x12\r\n\r\nISA*00*~")
	sigAlg := func(d DigestAlgorithm) []byte {
		oid, err := pkcs1SignatureOID(partner.key.Public(), d)
		if err != nil {
			t.Fatal(err)
		}
		return derSequence(mustMarshal(oid))
	}
	tests := []struct {
		name       string
		protection []byte
		want       error
	}{
		{"matching", algorithmProtection(SHA256, sigAlg(SHA256)), nil},
		{"matching, NULL parameters", algorithmProtection(SHA256, derSequence(mustMarshal(oidSHA256WithRSA), []byte{tagNull, 0})), nil},
		{"other digest", algorithmProtection(SHA512, sigAlg(SHA256)), ErrIntegrity},
		{"other signature algorithm", algorithmProtection(SHA256, sigAlg(SHA512)), ErrIntegrity},
		{"RSASSA-PSS named for a PKCS #1 v1.5 signature", algorithmProtection(SHA256, derSequence(mustMarshal(oidRSASSAPSS))), ErrIntegrity},
		{"no signature algorithm", derSequence(derSequence(mustMarshal(oidSHA256))), ErrIntegrity},
		{"not a sequence", mustMarshal(42), ErrIntegrity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := signWithProtection(t, content, partner, SHA256, tt.protection)
			info, err := VerifyDetached(sig, content, []*x509.Certificate{partner.cert}, VerifyOptions{})
			if tt.want == nil {
				if err != nil || !info.AlgorithmProtection {
					t.Fatalf("VerifyDetached: %+v, %v", info, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyDetached error = %v, want %v", err, tt.want)
			}
		})
	}
}

// OpenSSL accepts our signatures that carry the RFC 6211 attribute and names
// the attribute by its OID. (OpenSSL 3.0 does not compare the attribute with
// the SignerInfo, so refusing a mismatch is shown by
// TestAlgorithmProtectionMismatch alone.)
func TestOpenSSLVerifiesOurAlgorithmProtection(t *testing.T) {
	dir := t.TempDir()
	partner := testIdentity(t, "partner")
	certFile, _ := writePEM(t, dir, partner)
	content := []byte("Content-Type: application/octet-stream\r\n\r\n\x00\x01protected")
	in := filepath.Join(dir, "content.bin")
	if err := os.WriteFile(in, content, 0o600); err != nil {
		t.Fatal(err)
	}
	opts := SignOptions{AlgorithmProtection: true}
	tests := []struct {
		name string
		sign func() ([]byte, error)
	}{
		{"pkcs1v15", func() ([]byte, error) { return SignDetachedWith(content, partner.cert, partner.key, nil, SHA384, opts) }},
		{"pss", func() ([]byte, error) {
			return SignDetachedPSSWith(content, partner.cert, partner.key, nil, SHA256, opts)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := tt.sign()
			if err != nil {
				t.Fatal(err)
			}
			sigFile := filepath.Join(dir, "sig.der")
			if err := os.WriteFile(sigFile, sig, 0o600); err != nil {
				t.Fatal(err)
			}
			openssl(t, "cms", "-verify", "-binary", "-inform", "DER", "-in", sigFile, "-content", in,
				"-CAfile", certFile, "-purpose", "any", "-out", filepath.Join(dir, "verified.bin"))
			printed := openssl(t, "cms", "-cmsout", "-print", "-inform", "DER", "-in", sigFile)
			if !bytes.Contains(printed, []byte("(1.2.840.113549.1.9.52)")) {
				t.Errorf("openssl shows no algorithm protection attribute:\n%s", printed)
			}
		})
	}
}
