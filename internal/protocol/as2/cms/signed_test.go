package cms

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/protocol/as2/as2test"
)

// pkcs7Sign is the detached signature as package pkcs7 makes it, which
// SignDetached made before it built the SignedData itself, with the RFC 6211
// attribute when protect is set.
func pkcs7Sign(t *testing.T, content []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate, digest DigestAlgorithm, protect bool) []byte {
	t.Helper()
	var protection []byte
	if protect {
		sigAlg, err := pkcs1SignatureOID(key.Public(), digest)
		if err != nil {
			t.Fatal(err)
		}
		protection = algorithmProtection(digest, derSequence(mustMarshal(sigAlg)))
	}
	return as2test.PKCS7Sign(t, content, cert, key, chain, digest.oid(), protection)
}

// signerOf decodes the only SignerInfo of a SignedData and its signing time.
func signerOf(t testing.TB, der []byte) (signedDataASN, signerInfoASN, time.Time) {
	t.Helper()
	var ci struct {
		ContentType asn1.ObjectIdentifier
		Content     asn1.RawValue `asn1:"explicit,tag:0"`
	}
	var sd signedDataASN
	var si signerInfoASN
	if _, err := asn1.Unmarshal(der, &ci); err != nil {
		t.Fatal(err)
	}
	if _, err := asn1.Unmarshal(ci.Content.Bytes, &sd); err != nil {
		t.Fatal(err)
	}
	if _, err := asn1.Unmarshal(sd.SignerInfos.Bytes, &si); err != nil {
		t.Fatal(err)
	}
	var at time.Time
	for rest := si.SignedAttrs.Bytes; len(rest) > 0; {
		var a attributeASN
		var err error
		if rest, err = asn1.Unmarshal(rest, &a); err != nil {
			t.Fatal(err)
		}
		if a.Type.Equal(oidAttrSigningTime) {
			if _, err := asn1.Unmarshal(a.Values.Bytes, &at); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sd, si, at
}

// The SignedData built here is the one package pkcs7 builds, byte for byte
// where the signature is deterministic (RSA PKCS #1 v1.5) and field for field
// otherwise.
func TestSignDigestMatchesPKCS7(t *testing.T) {
	content := bytes.Repeat([]byte("UNB+UNOC:3+SENDER+RECEIVER'\r\n"), 50)
	ca := certstest.CA(t, "signing CA")
	leaf := certstest.ValidLeaf(t, ca, "chained signer", certstest.RSAKey(t))
	tests := []struct {
		name  string
		cert  *x509.Certificate
		key   crypto.Signer
		chain []*x509.Certificate
	}{
		{"rsa", testIdentity(t, "partner").cert, testIdentity(t, "partner").key, nil},
		{"rsa with chain", leaf.Cert, leaf.Key, []*x509.Certificate{ca.Cert}},
		{"ecdsa", testIdentity(t, "ec-partner").cert, testIdentity(t, "ec-partner").key, nil},
	}
	for _, tt := range tests {
		for _, digest := range DigestAlgorithms {
			for _, protect := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/protect=%v", tt.name, digest, protect), func(t *testing.T) {
					want := pkcs7Sign(t, content, tt.cert, tt.key, tt.chain, digest, protect)
					wantSD, wantSI, at := signerOf(t, want)
					md := digest.Hash().New()
					md.Write(content)
					got, err := signDigest(md.Sum(nil), tt.cert, tt.key, tt.chain, digest, false, SignOptions{AlgorithmProtection: protect}, at)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := VerifyDetached(got, content, []*x509.Certificate{tt.cert}, VerifyOptions{AllowSHA1: true}); err != nil {
						t.Fatal(err)
					}
					if tt.name != "ecdsa" {
						if !bytes.Equal(got, want) {
							t.Errorf("differs from pkcs7:\n got %x\nwant %x", got, want)
						}
						return
					}
					gotSD, gotSI, _ := signerOf(t, got)
					if !bytes.Equal(gotSD.DigestAlgorithms.FullBytes, wantSD.DigestAlgorithms.FullBytes) ||
						!bytes.Equal(gotSD.Certificates.FullBytes, wantSD.Certificates.FullBytes) ||
						gotSD.Version != wantSD.Version || !gotSD.EncapContentInfo.EContentType.Equal(wantSD.EncapContentInfo.EContentType) ||
						len(gotSD.EncapContentInfo.EContent.FullBytes) != 0 {
						t.Error("SignedData fields differ from pkcs7")
					}
					if !bytes.Equal(gotSI.SID.FullBytes, wantSI.SID.FullBytes) || !bytes.Equal(gotSI.SignedAttrs.FullBytes, wantSI.SignedAttrs.FullBytes) ||
						!gotSI.DigestAlgorithm.Algorithm.Equal(wantSI.DigestAlgorithm.Algorithm) ||
						!gotSI.SignatureAlgorithm.Algorithm.Equal(wantSI.SignatureAlgorithm.Algorithm) || gotSI.Version != wantSI.Version {
						t.Error("SignerInfo fields differ from pkcs7")
					}
				})
			}
		}
	}
}

func TestSignDigestRefuses(t *testing.T) {
	partner, other := testIdentity(t, "partner"), testIdentity(t, "other")
	md := make([]byte, 32)
	if _, err := SignDigest(md[:20], partner.cert, partner.key, nil, SHA256, false); err == nil {
		t.Error("a digest of the wrong length was signed")
	}
	if _, err := SignDigest(md, partner.cert, partner.key, nil, "md5", false); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Errorf("md5: %v", err)
	}
	if _, err := SignDigest(md, partner.cert, partner.key, []*x509.Certificate{other.cert}, SHA256, false); err == nil {
		t.Error("a chain that did not issue the certificate was accepted")
	}
	ec := testIdentity(t, "ec-partner")
	if _, err := SignDigest(md, ec.cert, ec.key, nil, SHA256, true); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Errorf("PSS with an EC key: %v", err)
	}
}
