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
// TLS root when it is an authority (its basic constraints say CA); a partner's otherwise.
// Which records use it is listed beside the role, as "used by".
func RoleOf(c persistence.Certificate) Role {
	if c.HasPrivateKey {
		return RoleOurs
	}
	cert, err := x509.ParseCertificate(c.DER)
	if err != nil || !cert.IsCA {
		return RolePartner
	}
	return RoleTLSRoot
}
