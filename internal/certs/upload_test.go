package certs_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
)

// keyStore keeps certificates in memory, listing and creating them as the SQL store does.
type keyStore struct{ list []persistence.Certificate }

func (s *keyStore) CreateCertificates(ctx context.Context, recs []persistence.Certificate) ([]persistence.Certificate, error) {
	for _, r := range recs {
		for _, c := range s.list {
			if c.Fingerprint == r.Fingerprint {
				return nil, fmt.Errorf("certificate %s: %w", r.Fingerprint, persistence.ErrConflict)
			}
		}
	}
	out := make([]persistence.Certificate, len(recs))
	for i, r := range recs {
		r.ID = int64(len(s.list) + 1)
		r.HasPrivateKey = len(r.SealedKey) > 0
		s.list = append(s.list, r)
		out[i] = r
	}
	return out, nil
}

func (s *keyStore) ListCertificates(ctx context.Context, opt persistence.ListOptions) ([]persistence.Certificate, int, error) {
	return s.list, len(s.list), nil
}

func (s *keyStore) GetCertificate(ctx context.Context, id int64) (persistence.Certificate, error) {
	if id < 1 || int(id) > len(s.list) {
		return persistence.Certificate{}, persistence.ErrNotFound
	}
	return s.list[id-1], nil
}

func TestImportUploadForms(t *testing.T) {
	ctx := context.Background()
	ca := certstest.CA(t, "Upload CA")
	rsaKey, ecKey := certstest.RSAKey(t), certstest.ECKey(t)
	rsaLeaf := certstest.ValidLeaf(t, ca, "rsa leaf", rsaKey)
	ecLeaf := certstest.ValidLeaf(t, ca, "ec leaf", ecKey)
	cases := []struct {
		name      string
		upload    certs.Upload
		wantField string // "" when accepted
		wantMsg   string
	}{
		{name: "separate files, PEM key", upload: certs.Upload{File: certstest.CertsPEM(rsaLeaf.Cert), Key: certstest.KeyPEM(t, rsaKey, certstest.PKCS1)}},
		{name: "separate files, DER key", upload: certs.Upload{File: ecLeaf.Cert.Raw, Key: pemBytes(t, certstest.KeyPEM(t, ecKey, certstest.PKCS8))}},
		{name: "one PEM with both", upload: certs.Upload{File: append(certstest.CertsPEM(rsaLeaf.Cert), certstest.KeyPEM(t, rsaKey, certstest.PKCS8)...)}},
		{name: "PKCS#12", upload: certs.Upload{File: certstest.OpenSSLPKCS12(t, ecLeaf, nil, "s3cret"), Password: "s3cret"}},
		{name: "separate key of another certificate", upload: certs.Upload{File: certstest.CertsPEM(rsaLeaf.Cert), Key: certstest.KeyPEM(t, ecKey, certstest.PKCS8)},
			wantField: "key", wantMsg: "does not belong to the certificate"},
		{name: "one PEM with another key", upload: certs.Upload{File: append(certstest.CertsPEM(rsaLeaf.Cert), certstest.KeyPEM(t, ecKey, certstest.PKCS8)...)},
			wantField: "file", wantMsg: "matches none of the certificates"},
		{name: "key file that is no key", upload: certs.Upload{File: certstest.CertsPEM(rsaLeaf.Cert), Key: []byte("hello")},
			wantField: "key", wantMsg: "not a private key"},
		{name: "key twice", upload: certs.Upload{File: append(certstest.CertsPEM(rsaLeaf.Cert), certstest.KeyPEM(t, rsaKey, certstest.PKCS8)...), Key: certstest.KeyPEM(t, rsaKey, certstest.PKCS8)},
			wantField: "key", wantMsg: "already holds a private key"},
		{name: "wrong PKCS#12 password", upload: certs.Upload{File: certstest.OpenSSLPKCS12(t, ecLeaf, nil, "s3cret"), Password: "nope"},
			wantField: "password", wantMsg: "wrong"},
		{name: "our key as a partner's", upload: certs.Upload{File: certstest.CertsPEM(rsaLeaf.Cert), Key: certstest.KeyPEM(t, rsaKey, certstest.PKCS8), Partner: true},
			wantField: "file", wantMsg: certs.OwnAsPartner},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &keyStore{}
			stored, err := certs.ImportUpload(ctx, st, testBox(t), tc.upload)
			if tc.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(stored) != 1 || !stored[0].HasPrivateKey {
					t.Fatalf("stored %+v", stored)
				}
				return
			}
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.wantField || !strings.Contains(fe.Message, tc.wantMsg) {
				t.Fatalf("error %v, want field %s saying %q", err, tc.wantField, tc.wantMsg)
			}
			if len(st.list) != 0 {
				t.Fatal("a refused upload stored certificates")
			}
			if tc.upload.Password != "" && strings.Contains(err.Error(), tc.upload.Password) {
				t.Fatal("the password is in the error")
			}
		})
	}
}

// pemBytes is the DER inside the first PEM block.
func pemBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	return blk.Bytes
}

func TestCAAnswerJoinsStoredKey(t *testing.T) {
	ctx := context.Background()
	box := testBox(t)
	st := &keyStore{}
	own, err := certs.GenerateStored(ctx, st, box, certs.GenerateRequest{Algorithm: certs.RSA2048, ValidityDays: 30,
		Subject: certs.Subject{CommonName: "our as2"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The CA issues a certificate for the stored key (the one the CSR carries).
	_, key, err := certs.NewOpener(st, box).Signer(ctx, own.ID)
	if err != nil {
		t.Fatal(err)
	}
	ca := certstest.CA(t, "Issuing CA")
	issued := certstest.ValidLeaf(t, ca, "our as2", key)

	// As a partner's certificate it is refused: it is ours.
	_, err = certs.ImportUpload(ctx, st, box, certs.Upload{File: certstest.CertsPEM(issued.Cert), Partner: true})
	var fe *persistence.FieldError
	if !errors.As(err, &fe) || fe.Message != certs.OwnAsPartner {
		t.Fatalf("partner upload of our certificate: %v", err)
	}

	stored, err := certs.ImportUpload(ctx, st, box, certs.Upload{File: certstest.CertsPEM(issued.Cert, ca.Cert)})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || !stored[0].HasPrivateKey || stored[1].HasPrivateKey {
		t.Fatalf("stored %+v", stored)
	}
	cert, signer, err := certs.NewOpener(st, box).Signer(ctx, stored[0].ID)
	if err != nil {
		t.Fatalf("the issued certificate's key does not open: %v", err)
	}
	if cert.Issuer.CommonName != "Issuing CA" || !certs.KeyMatches(cert, signer) {
		t.Fatalf("opened %s", cert.Subject)
	}
	if certs.RoleOf(stored[0]) != certs.RoleOurs || certs.RoleOf(stored[1]) != certs.RoleTLSRoot {
		t.Fatalf("roles %s, %s", certs.RoleOf(stored[0]), certs.RoleOf(stored[1]))
	}
}
