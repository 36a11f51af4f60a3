package certs_test

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
)

func TestParseFormats(t *testing.T) {
	ca := certstest.CA(t, "Test CA")
	rsaKey := certstest.RSAKey(t)
	ecKey := certstest.ECKey(t)
	rsaLeaf := certstest.ValidLeaf(t, ca, "rsa leaf", rsaKey)
	ecLeaf := certstest.ValidLeaf(t, ca, "ec leaf", ecKey)

	cases := []struct {
		name     string
		data     []byte
		password string
		want     []*x509.Certificate
		keyFor   *x509.Certificate // the certificate that gets the key, nil for none
	}{
		{name: "PEM certificate", data: certstest.CertsPEM(rsaLeaf.Cert), want: []*x509.Certificate{rsaLeaf.Cert}},
		{name: "PEM chain", data: certstest.CertsPEM(rsaLeaf.Cert, ca.Cert), want: []*x509.Certificate{rsaLeaf.Cert, ca.Cert}},
		{name: "PEM with PKCS#8 RSA key", data: join(certstest.CertsPEM(rsaLeaf.Cert, ca.Cert), certstest.KeyPEM(t, rsaKey, certstest.PKCS8)),
			want: []*x509.Certificate{rsaLeaf.Cert, ca.Cert}, keyFor: rsaLeaf.Cert},
		{name: "PEM with PKCS#1 key first", data: join(certstest.KeyPEM(t, rsaKey, certstest.PKCS1), certstest.CertsPEM(rsaLeaf.Cert)),
			want: []*x509.Certificate{rsaLeaf.Cert}, keyFor: rsaLeaf.Cert},
		{name: "PEM with SEC 1 EC key", data: join([]byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"),
			certstest.KeyPEM(t, ecKey, certstest.SEC1), certstest.CertsPEM(ecLeaf.Cert)),
			want: []*x509.Certificate{ecLeaf.Cert}, keyFor: ecLeaf.Cert},
		{name: "PEM with text around the blocks", data: join([]byte("subject=CN = rsa leaf\n"), certstest.CertsPEM(rsaLeaf.Cert), []byte("trailer\n")),
			want: []*x509.Certificate{rsaLeaf.Cert}},
		{name: "PEM repeating a certificate", data: certstest.CertsPEM(rsaLeaf.Cert, ca.Cert, rsaLeaf.Cert), want: []*x509.Certificate{rsaLeaf.Cert, ca.Cert}},
		{name: "DER", data: ecLeaf.Cert.Raw, want: []*x509.Certificate{ecLeaf.Cert}},
		{name: "PKCS#12 from openssl with chain", data: certstest.OpenSSLPKCS12(t, rsaLeaf, []*x509.Certificate{ca.Cert}, "s3cret pass"),
			password: "s3cret pass", want: []*x509.Certificate{rsaLeaf.Cert, ca.Cert}, keyFor: rsaLeaf.Cert},
		{name: "PKCS#12 from openssl, EC", data: certstest.OpenSSLPKCS12(t, ecLeaf, nil, "pw"),
			password: "pw", want: []*x509.Certificate{ecLeaf.Cert}, keyFor: ecLeaf.Cert},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := certs.Parse(tc.data, tc.password)
			if err != nil {
				t.Fatal(err)
			}
			var fps, want []string
			for _, p := range got {
				fps = append(fps, certs.Fingerprint(p.Cert.Raw))
				if p.Key != nil && !p.Cert.Equal(tc.keyFor) {
					t.Errorf("key attached to %s", p.Cert.Subject)
				}
				if p.Key == nil && tc.keyFor != nil && p.Cert.Equal(tc.keyFor) {
					t.Errorf("no key attached to %s", p.Cert.Subject)
				}
			}
			for _, c := range tc.want {
				want = append(want, certs.Fingerprint(c.Raw))
			}
			if !slices.Equal(fps, want) {
				t.Errorf("certificates = %v, want %v", fps, want)
			}
		})
	}
}

func TestParseRefusals(t *testing.T) {
	ca := certstest.CA(t, "Test CA")
	key := certstest.RSAKey(t)
	leaf := certstest.ValidLeaf(t, ca, "leaf", key)
	p12 := certstest.OpenSSLPKCS12(t, leaf, []*x509.Certificate{ca.Cert}, "right")

	cases := []struct {
		name     string
		data     []byte
		password string
		want     error
		mention  string
	}{
		{name: "wrong PKCS#12 password", data: p12, password: "not-it", want: certs.ErrWrongPassword},
		{name: "missing PKCS#12 password", data: p12, want: certs.ErrWrongPassword},
		{name: "key of another certificate", data: join(certstest.CertsPEM(leaf.Cert, ca.Cert), certstest.KeyPEM(t, certstest.RSAKey(t), certstest.PKCS8)),
			want: certs.ErrKeyMismatch},
		{name: "key alone", data: certstest.KeyPEM(t, key, certstest.PKCS8), want: certs.ErrNoCertificate},
		{name: "empty", data: []byte(" \n"), want: certs.ErrNoCertificate},
		{name: "garbage", data: []byte("this is not a certificate"), want: certs.ErrUnrecognized},
		{name: "truncated DER", data: leaf.Cert.Raw[:100], want: certs.ErrUnrecognized},
		{name: "damaged PEM certificate", data: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
			want: certs.ErrUnrecognized, mention: "PEM block 1"},
		{name: "two keys", data: join(certstest.CertsPEM(leaf.Cert), certstest.KeyPEM(t, key, certstest.PKCS8), certstest.KeyPEM(t, key, certstest.PKCS1)),
			want: certs.ErrUnrecognized, mention: "second private key"},
		{name: "encrypted key", data: join(certstest.CertsPEM(leaf.Cert), []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")),
			want: certs.ErrUnrecognized, mention: "encrypted"},
		{name: "other PEM block", data: []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"),
			want: certs.ErrUnrecognized, mention: "CERTIFICATE REQUEST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := certs.Parse(tc.data, tc.password)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
			if tc.password != "" && strings.Contains(err.Error(), tc.password) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestKeyMatches(t *testing.T) {
	ca := certstest.CA(t, "Test CA")
	key := certstest.ECKey(t)
	leaf := certstest.ValidLeaf(t, ca, "leaf", key)
	if !certs.KeyMatches(leaf.Cert, key) {
		t.Error("the leaf's own key does not match")
	}
	for _, other := range []crypto.Signer{certstest.ECKey(t), certstest.RSAKey(t), ca.Key} {
		if certs.KeyMatches(leaf.Cert, other) {
			t.Errorf("a %T key of another certificate matches", other)
		}
	}
}

func TestFingerprint(t *testing.T) {
	// SHA-256 of the empty string: the fingerprint is plain lower-case hex.
	if got := certs.Fingerprint(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("Fingerprint = %s", got)
	}
}

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
