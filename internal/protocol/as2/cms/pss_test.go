package cms

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"testing"
)

// resignPSS replaces the signature of a SignedData's only signer with an
// RSASSA-PSS signature made with hash and salt, and leaves the parameters out
// of its AlgorithmIdentifier, as pyas2-lib does.
func resignPSS(t testing.TB, der []byte, key *rsa.PrivateKey, hash crypto.Hash, salt int) []byte {
	t.Helper()
	_, si, _ := signerOf(t, der)
	md := hash.New()
	md.Write(derSet(si.SignedAttrs.Bytes))
	sig, err := rsa.SignPSS(rand.Reader, key, hash, md.Sum(nil), &rsa.PSSOptions{SaltLength: salt, Hash: hash})
	if err != nil {
		t.Fatal(err)
	}
	si.Signature = sig
	si.SignatureAlgorithm = pkix.AlgorithmIdentifier{Algorithm: oidRSASSAPSS}
	return replaceSigner(t, der, si)
}

// RSASSA-PSS without parameters: the RFC 4055 defaults first, then the
// SignerInfo's digest with the salt the signature implies, each noted.
func TestVerifyPSSWithoutParameters(t *testing.T) {
	partner := testIdentity(t, "partner")
	key := partner.key.(*rsa.PrivateKey)
	content := []byte("Content-Type: application/octet-stream\r\n\r\npss without parameters")
	base, err := SignDetached(content, partner.cert, partner.key, nil, SHA256)
	if err != nil {
		t.Fatal(err)
	}
	longest := (key.N.BitLen()-1+7)/8 - crypto.SHA256.Size() - 2
	tests := []struct {
		name      string
		hash      crypto.Hash
		salt      int
		allowSHA1 bool
		note      string
		err       error
	}{
		{"pyas2-lib: SHA-256, longest salt", crypto.SHA256, rsa.PSSSaltLengthAuto,
			false, fmt.Sprintf("RSASSA-PSS parameters absent: verified as SHA-256, salt %d", longest), nil},
		{"SHA-256, salt as long as the digest", crypto.SHA256, 32, false, "RSASSA-PSS parameters absent: verified as SHA-256, salt 32", nil},
		{"SHA-256, salt of 7", crypto.SHA256, 7, false, "RSASSA-PSS parameters absent: verified as SHA-256, salt 7", nil},
		{"RFC 4055 defaults, SHA-1 allowed", crypto.SHA1, 20, true, "RSASSA-PSS parameters absent: verified with the RFC 4055 defaults (SHA-1, salt 20)", nil},
		{"RFC 4055 defaults, SHA-1 not allowed", crypto.SHA1, 20, false, "", ErrInsufficientSecurity},
		{"a hash other than the signer's digest", crypto.SHA512, 64, false, "", ErrAuthentication},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := resignPSS(t, base, key, tt.hash, tt.salt)
			opts := VerifyOptions{AllowSHA1: tt.allowSHA1}
			info, err := VerifyDetached(sig, content, []*x509.Certificate{partner.cert}, opts)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("VerifyDetached error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Scheme != SchemePSS || len(info.Tolerances) != 1 || info.Tolerances[0] != tt.note {
				t.Errorf("scheme %s, tolerances %q, want %q", info.Scheme, info.Tolerances, tt.note)
			}
			if _, err := VerifyDetached(sig, append([]byte("x"), content...), []*x509.Certificate{partner.cert}, opts); !errors.Is(err, ErrIntegrity) {
				t.Errorf("altered content: %v", err)
			}
			altered := resignPSS(t, base, key, tt.hash, tt.salt)
			_, si, _ := signerOf(t, altered)
			si.Signature[len(si.Signature)/2] ^= 1
			if _, err := VerifyDetached(replaceSigner(t, altered, si), content, []*x509.Certificate{partner.cert}, opts); !errors.Is(err, ErrAuthentication) {
				t.Errorf("altered signature: %v", err)
			}
		})
	}
}

// replaceSigner puts si in place of the only signer of a SignedData.
func replaceSigner(t testing.TB, der []byte, si signerInfoASN) []byte {
	t.Helper()
	sd, _, _ := signerOf(t, der)
	sd.SignerInfos = asn1.RawValue{FullBytes: derSet(mustMarshal(si))}
	return contentInfo(oidSignedData, mustMarshal(sd))
}
