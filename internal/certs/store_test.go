package certs_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
	"wharf/internal/secret"
)

func testBox(t *testing.T) *secret.Box {
	t.Helper()
	k, err := secret.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := secret.New(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// memStore holds records by id as a store would after CreateCertificates.
type memStore map[int64]persistence.Certificate

func (m memStore) GetCertificate(ctx context.Context, id int64) (persistence.Certificate, error) {
	c, ok := m[id]
	if !ok {
		return c, fmt.Errorf("certificate %d: %w", id, persistence.ErrNotFound)
	}
	return c, nil
}

func TestRecordsSealKeysAndOpenerOpensThem(t *testing.T) {
	ctx := context.Background()
	box := testBox(t)
	ca := certstest.CA(t, "Test CA")
	rsaKey := certstest.RSAKey(t)
	leaf := certstest.ValidLeaf(t, ca, "leaf", rsaKey)
	parsed, err := certs.Parse(append(certstest.CertsPEM(leaf.Cert, ca.Cert), certstest.KeyPEM(t, rsaKey, certstest.PKCS1)...), "")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := certs.Records(parsed, "partner signing", box)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || !recs[0].HasPrivateKey || recs[1].HasPrivateKey {
		t.Fatalf("records = %+v", recs)
	}
	r := recs[0]
	if r.Fingerprint != certs.Fingerprint(leaf.Cert.Raw) || r.Subject != leaf.Cert.Subject.String() ||
		r.Issuer != ca.Cert.Subject.String() || r.SerialNumber != leaf.Cert.SerialNumber.Text(16) ||
		!r.NotAfter.Equal(leaf.Cert.NotAfter) || r.Description != "partner signing" || !bytes.Equal(r.DER, leaf.Cert.Raw) {
		t.Errorf("record = %+v", r)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	if bytes.Contains(r.SealedKey, keyDER) || bytes.Contains(r.SealedKey, x509.MarshalPKCS1PrivateKey(rsaKey)) {
		t.Fatal("the sealed key contains the key in the clear")
	}

	store := memStore{1: recs[0], 2: recs[1]}
	o := certs.NewOpener(store, box)
	cert, signer, err := o.Signer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.Equal(leaf.Cert) {
		t.Error("Signer returned another certificate")
	}
	digest := sha256.Sum256([]byte("document"))
	sig, err := signer.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPKCS1v15(&rsaKey.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
		t.Errorf("signature does not verify: %v", err)
	}
	_, dec, err := o.Decrypter(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := rsa.EncryptPKCS1v15(rand.Reader, &rsaKey.PublicKey, []byte("session key"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := dec.Decrypt(rand.Reader, ct, nil); err != nil || string(pt) != "session key" {
		t.Errorf("Decrypt = %q, %v", pt, err)
	}

	if _, _, err := o.Signer(ctx, 2); !errors.Is(err, certs.ErrNoPrivateKey) {
		t.Errorf("Signer of a certificate without key: %v, want ErrNoPrivateKey", err)
	}
	if _, _, err := o.Signer(ctx, 3); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("Signer of a missing certificate: %v, want ErrNotFound", err)
	}
	if _, _, err := certs.NewOpener(store, testBox(t)).Signer(ctx, 1); err == nil {
		t.Error("a key sealed under another master key opened")
	}
}

func TestDecrypterRefusesECKeys(t *testing.T) {
	box := testBox(t)
	ca := certstest.CA(t, "Test CA")
	key := certstest.ECKey(t)
	leaf := certstest.ValidLeaf(t, ca, "ec", key)
	recs, err := certs.Records([]certs.Parsed{{Cert: leaf.Cert, Key: key}}, "", box)
	if err != nil {
		t.Fatal(err)
	}
	o := certs.NewOpener(memStore{1: recs[0]}, box)
	if _, _, err := o.Signer(context.Background(), 1); err != nil {
		t.Fatalf("Signer of an EC key: %v", err)
	}
	if _, _, err := o.Decrypter(context.Background(), 1); !errors.Is(err, certs.ErrNoPrivateKey) {
		t.Errorf("Decrypter of an EC key: %v, want ErrNoPrivateKey", err)
	}
}
