package db_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"slices"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/secret"
)

// certFixture is a CA and a leaf with an EC key, as records ready to store (the leaf's
// key sealed under box).
type certFixture struct {
	box  *secret.Box
	key  *ecdsa.PrivateKey
	leaf certstest.Pair
	ca   certstest.Pair
	recs []persistence.Certificate // leaf (with key), CA
}

func newCertFixture(t *testing.T) certFixture {
	t.Helper()
	k, err := secret.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(k)
	if err != nil {
		t.Fatal(err)
	}
	f := certFixture{box: box, key: certstest.ECKey(t), ca: certstest.CA(t, "Test CA")}
	f.leaf = certstest.ValidLeaf(t, f.ca, "leaf", f.key)
	f.recs, err = certs.Records([]certs.Parsed{{Cert: f.leaf.Cert, Key: f.key}, {Cert: f.ca.Cert}}, "test", box)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCertificates(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		f := newCertFixture(t)
		created := must1[[]persistence.Certificate](t)(s.CreateCertificates(ctx, f.recs))
		if len(created) != 2 || created[0].ID == 0 || created[1].ID == 0 || created[0].CreatedAt.IsZero() {
			t.Fatalf("CreateCertificates = %+v", created)
		}
		leaf, ca := created[0], created[1]
		if !leaf.HasPrivateKey || ca.HasPrivateKey || ca.SealedKey != nil {
			t.Errorf("private keys: leaf %v, CA %v", leaf.HasPrivateKey, ca.HasPrivateKey)
		}

		got := must1[persistence.Certificate](t)(s.GetCertificate(ctx, leaf.ID))
		if got.Fingerprint != certs.Fingerprint(f.leaf.Cert.Raw) || got.Subject != f.leaf.Cert.Subject.String() ||
			got.Issuer != f.ca.Cert.Subject.String() || got.SerialNumber != f.leaf.Cert.SerialNumber.Text(16) ||
			!got.NotBefore.Equal(f.leaf.Cert.NotBefore) || !got.NotAfter.Equal(f.leaf.Cert.NotAfter) ||
			got.Description != "test" || !bytes.Equal(got.DER, f.leaf.Cert.Raw) || !bytes.Equal(got.SealedKey, f.recs[0].SealedKey) {
			t.Errorf("GetCertificate = %+v", got)
		}
		_, err := s.GetCertificate(ctx, 9999)
		wantErr(t, err, persistence.ErrNotFound)

		list, total := mustList(t)(s.ListCertificates(ctx, persistence.ListOptions{}))
		if total != 2 || len(list) != 2 || list[0].ID != leaf.ID {
			t.Errorf("ListCertificates = %d %+v, want the leaf (soonest expiry) first", total, list)
		}
		list, total = mustList(t)(s.ListCertificates(ctx, persistence.ListOptions{Limit: 1, Offset: 1}))
		if total != 2 || len(list) != 1 || list[0].ID != ca.ID {
			t.Errorf("second page = %d %+v", total, list)
		}

		must(t, s.DeleteCertificate(ctx, ca.ID))
		wantErr(t, s.DeleteCertificate(ctx, ca.ID), persistence.ErrNotFound)
	})
}

func TestCertificateDuplicatesWriteNothing(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		f := newCertFixture(t)
		first := must1[[]persistence.Certificate](t)(s.CreateCertificates(ctx, f.recs[1:]))

		other := certstest.ValidLeaf(t, f.ca, "other", certstest.ECKey(t))
		more, err := certs.Records([]certs.Parsed{{Cert: other.Cert}, {Cert: f.ca.Cert}}, "", f.box)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateCertificates(ctx, more)
		wantErr(t, err, persistence.ErrConflict)
		if want := "id " + itoa(first[0].ID); !bytes.Contains([]byte(err.Error()), []byte(f.recs[1].Fingerprint)) ||
			!bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("conflict %q does not name the fingerprint and %s", err, want)
		}
		_, err = s.CreateCertificates(ctx, []persistence.Certificate{more[0], more[0]})
		wantErr(t, err, persistence.ErrConflict)
		if _, total := mustList(t)(s.ListCertificates(ctx, persistence.ListOptions{})); total != 1 {
			t.Errorf("%d certificates stored after refused uploads, want 1", total)
		}
	})
}

func TestInvalidCertificatesAreRefused(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		f := newCertFixture(t)
		for field, mutate := range map[string]func(c *persistence.Certificate){
			"fingerprint": func(c *persistence.Certificate) { c.Fingerprint = "ABC" },
			"der":         func(c *persistence.Certificate) { c.DER = nil },
			"not_after":   func(c *persistence.Certificate) { c.NotAfter = time.Time{} },
			"description": func(c *persistence.Certificate) { c.Description = "line\nbreak" },
		} {
			c := f.recs[0]
			mutate(&c)
			_, err := s.CreateCertificates(ctx, []persistence.Certificate{c})
			wantField(t, err, field)
		}
	})
}

func TestCertificateUses(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		f := newCertFixture(t)
		created := must1[[]persistence.Certificate](t)(s.CreateCertificates(ctx, f.recs))
		leaf, ca := created[0].ID, created[1].ID

		must(t, s.SetCertificateUses(ctx, "as2_remote_profile", "acme", []int64{leaf, ca, leaf}))
		must(t, s.SetCertificateUses(ctx, "as2_local_profile", "local", []int64{leaf}))
		uses := must1[[]persistence.CertificateUse](t)(s.ListCertificateUses(ctx, leaf))
		want := []persistence.CertificateUse{
			{CertificateID: leaf, Kind: "as2_local_profile", Name: "local"},
			{CertificateID: leaf, Kind: "as2_remote_profile", Name: "acme"},
		}
		if !slices.Equal(uses, want) {
			t.Errorf("uses = %+v, want %+v", uses, want)
		}
		wantErr(t, s.DeleteCertificate(ctx, leaf), persistence.ErrInUse)
		wantErr(t, s.DeleteCertificate(ctx, ca), persistence.ErrInUse)

		// Replacing a record's uses drops the ones it no longer names.
		must(t, s.SetCertificateUses(ctx, "as2_remote_profile", "acme", []int64{leaf}))
		must(t, s.DeleteCertificate(ctx, ca))

		wantField(t, s.SetCertificateUses(ctx, "as2_remote_profile", "acme", []int64{leaf, 9999}), "certificate_id")
		if uses := must1[[]persistence.CertificateUse](t)(s.ListCertificateUses(ctx, leaf)); len(uses) != 2 {
			t.Errorf("a refused SetCertificateUses changed the uses: %+v", uses)
		}
		wantField(t, s.SetCertificateUses(ctx, "Bad Kind", "acme", nil), "kind")
		wantField(t, s.SetCertificateUses(ctx, "receiver", "", nil), "name")
		_, err := s.ListCertificateUses(ctx, 9999)
		wantErr(t, err, persistence.ErrNotFound)

		must(t, s.SetCertificateUses(ctx, "as2_remote_profile", "acme", nil))
		must(t, s.SetCertificateUses(ctx, "as2_local_profile", "local", nil))
		must(t, s.DeleteCertificate(ctx, leaf))
	})
}

// TestPrivateKeysAreSealedAtRest reads the stored column itself: it holds neither form
// of the key's DER, and it opens back into a key that signs for the certificate.
func TestPrivateKeysAreSealedAtRest(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		f := newCertFixture(t)
		created := must1[[]persistence.Certificate](t)(s.CreateCertificates(ctx, f.recs))
		raw := must1[[]byte](t)(db.QueryBytes(ctx, s, `SELECT sealed_key FROM certificates WHERE id = ?`, created[0].ID))
		pkcs8 := must1[[]byte](t)(x509.MarshalPKCS8PrivateKey(f.key))
		sec1 := must1[[]byte](t)(x509.MarshalECPrivateKey(f.key))
		if len(raw) == 0 || bytes.Contains(raw, pkcs8) || bytes.Contains(raw, sec1) {
			t.Fatalf("stored key column (%d bytes) holds the key in the clear", len(raw))
		}

		cert, signer, err := certs.NewOpener(s, f.box).Signer(ctx, created[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		digest := sha256.Sum256([]byte("document"))
		sig, err := signer.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if !ecdsa.VerifyASN1(cert.PublicKey.(*ecdsa.PublicKey), digest[:], sig) {
			t.Error("the opened key's signature does not verify against the certificate")
		}
	})
}

// mustList checks the error of a certificate list: mustList(t)(f()).
func mustList(t testing.TB) func([]persistence.Certificate, int, error) ([]persistence.Certificate, int) {
	return func(v []persistence.Certificate, n int, err error) ([]persistence.Certificate, int) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v, n
	}
}
