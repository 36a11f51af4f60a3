package certs

import (
	"crypto/x509"

	"wharf/internal/persistence"
)

// Role is what a stored certificate is to us.
type Role string

const (
	// RoleOurs is one of our certificates: we hold its private key.
	RoleOurs Role = "ours"
	// RolePartner is a partner's certificate: no key, not an authority.
	RolePartner Role = "partner"
	// RoleTLSRoot is an authority's certificate without our key, such as a root a
	// partner's TLS server certificate chains to.
	RoleTLSRoot Role = "tls_root"
)

// Label is the role as the web UI shows it.
func (r Role) Label() string {
	switch r {
	case RoleOurs:
		return "Ours, with key"
	case RoleTLSRoot:
		return "TLS root / CA"
	}
	return "Partner's"
}

// RoleOf derives a certificate's role from what is stored: ours when we hold its key; a
// TLS root when it is an authority that signs certificates (basic constraints CA and the
// certificate-signing key usage); a partner's otherwise. A partner's self-signed
// certificate made by `openssl req -x509` claims CA without that key usage, so it stays a
// partner's. Which records use it is listed beside the role, as "used by".
func RoleOf(c persistence.Certificate) Role {
	if c.HasPrivateKey {
		return RoleOurs
	}
	cert, err := x509.ParseCertificate(c.DER)
	if err != nil || !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return RolePartner
	}
	return RoleTLSRoot
}
