package certs_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/persistence"
)

func TestGenerateEachAlgorithm(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		alg     certs.KeyAlgorithm
		bits    int // RSA modulus; 0 for ECDSA
		encrypt bool
	}{
		{certs.RSA2048, 2048, true},
		{certs.RSA3072, 3072, true},
		{certs.RSA4096, 4096, true},
		{certs.ECDSAP256, 0, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.alg), func(t *testing.T) {
			p, err := certs.Generate(certs.GenerateRequest{Algorithm: tc.alg, ValidityDays: 365,
				Subject: certs.Subject{CommonName: "wharf-a", Organization: "Example Ltd", Country: "DE"}}, now)
			if err != nil {
				t.Fatal(err)
			}
			// Parsed back from its DER, as the store keeps it.
			c, err := x509.ParseCertificate(p.Cert.Raw)
			if err != nil {
				t.Fatal(err)
			}
			if !certs.KeyMatches(c, p.Key) {
				t.Fatal("the key does not match the certificate")
			}
			if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
				t.Fatalf("not self-signed: %v", err)
			}
			if c.Subject.CommonName != "wharf-a" || c.Subject.Organization[0] != "Example Ltd" || c.Subject.Country[0] != "DE" {
				t.Fatalf("subject = %s", c.Subject)
			}
			if !c.NotAfter.Equal(now.AddDate(0, 0, 365)) || c.NotBefore.After(now) {
				t.Fatalf("validity %s .. %s", c.NotBefore, c.NotAfter)
			}
			if c.IsCA {
				t.Fatal("a generated end-entity certificate claims to be a CA")
			}
			if c.KeyUsage&x509.KeyUsageDigitalSignature == 0 || c.KeyUsage&x509.KeyUsageContentCommitment == 0 {
				t.Fatalf("key usage %b lacks signing", c.KeyUsage)
			}
			if got := c.KeyUsage&x509.KeyUsageKeyEncipherment != 0; got != tc.encrypt {
				t.Fatalf("key encipherment = %v, want %v", got, tc.encrypt)
			}
			switch k := p.Key.(type) {
			case *rsa.PrivateKey:
				if k.N.BitLen() != tc.bits {
					t.Fatalf("RSA key of %d bits, want %d", k.N.BitLen(), tc.bits)
				}
			case *ecdsa.PrivateKey:
				if tc.bits != 0 || k.Curve.Params().Name != "P-256" {
					t.Fatalf("ECDSA key on %s", k.Curve.Params().Name)
				}
			default:
				t.Fatalf("key of type %T", p.Key)
			}
		})
	}
}

func TestGenerateRefusesEveryBadFieldAtOnce(t *testing.T) {
	_, err := certs.Generate(certs.GenerateRequest{Algorithm: "dsa-1024", ValidityDays: 0,
		Subject: certs.Subject{Country: "Germany"}}, time.Now())
	got := map[string]bool{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *persistence.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a FieldError", e)
		}
		got[fe.Field] = true
	}
	for _, f := range []string{"algorithm", "common_name", "country", "validity_days"} {
		if !got[f] {
			t.Errorf("no error for %s in %v", f, err)
		}
	}
}

func TestCertificateRequestForStoredKey(t *testing.T) {
	ctx := context.Background()
	box := testBox(t)
	for _, alg := range []certs.KeyAlgorithm{certs.RSA2048, certs.ECDSAP256} {
		t.Run(string(alg), func(t *testing.T) {
			st := &keyStore{}
			rec, err := certs.GenerateStored(ctx, st, box, certs.GenerateRequest{Algorithm: alg, ValidityDays: 30,
				Subject: certs.Subject{CommonName: "csr test", Organization: "Example", Country: "FR"}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			out, err := certs.NewOpener(st, box).CertificateRequest(ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, rest := pem.Decode(out)
			if b == nil || b.Type != "CERTIFICATE REQUEST" || len(rest) != 0 {
				t.Fatalf("not one CERTIFICATE REQUEST block: %q", out)
			}
			csr, err := x509.ParseCertificateRequest(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if err := csr.CheckSignature(); err != nil {
				t.Fatalf("signature: %v", err)
			}
			cert, _ := x509.ParseCertificate(rec.DER)
			if csr.Subject.String() != cert.Subject.String() {
				t.Fatalf("subject %s, want %s", csr.Subject, cert.Subject)
			}
			if !cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(csr.PublicKey) {
				t.Fatal("the request's public key is not the stored certificate's")
			}
		})
	}
}
