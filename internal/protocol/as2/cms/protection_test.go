package cms

import (
	"crypto/x509"
	"errors"
	"testing"

	"wharf/internal/protocol/as2/as2test"
)

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
			sig := as2test.PKCS7Sign(t, content, partner.cert, partner.key, nil, oidSHA256, tt.protection)
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
