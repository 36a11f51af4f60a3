package certs_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
)

func TestRoleOf(t *testing.T) {
	ca := certstest.CA(t, "Root")
	leaf := certstest.ValidLeaf(t, ca, "partner", certstest.ECKey(t))
	// As `openssl req -x509` makes a partner's self-signed certificate: CA, no key usage.
	key := certstest.ECKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "openssl self-signed"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rec  persistence.Certificate
		want certs.Role
	}{
		{"with key", persistence.Certificate{DER: leaf.Cert.Raw, HasPrivateKey: true}, certs.RoleOurs},
		{"partner leaf", persistence.Certificate{DER: leaf.Cert.Raw}, certs.RolePartner},
		{"root", persistence.Certificate{DER: ca.Cert.Raw}, certs.RoleTLSRoot},
		{"self-signed claiming CA", persistence.Certificate{DER: der}, certs.RolePartner},
	} {
		if got := certs.RoleOf(tc.rec); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
