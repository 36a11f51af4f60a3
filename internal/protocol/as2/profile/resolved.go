package profile

import (
	"context"
	"crypto/x509"

	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// Inbound is everything a receiver needs to take a message from a partner to one of our
// organizations: both profiles and their certificates, opened.
type Inbound struct {
	Local  Local
	Remote Remote
	// Decryption holds our decryption keys, the current one first (two during a
	// rollover).
	Decryption []cms.Recipient
	// PartnerCertificates are the only certificates the partner's signatures and MDNs
	// are verified against.
	PartnerCertificates []*x509.Certificate
	// Signer signs our MDNs; nil when the organization has no signing key.
	Signer *mime.Signer
}

// Outbound is everything a sender needs to send to a partner for one of our
// organizations.
type Outbound struct {
	Local  Local
	Remote Remote
	// Signer signs the message when Remote.SigningAlgorithm is not none.
	Signer *mime.Signer
	// EncryptTo is the partner's newest valid certificate, used for encryption.
	EncryptTo *x509.Certificate
	// PartnerCertificates verify the partner's MDN signatures.
	PartnerCertificates []*x509.Certificate
	// Roots are the roots trusted for the endpoint's TLS per the profile's tls_trust;
	// nil means the system roots alone (TLSConfig applies a pin instead).
	Roots *x509.CertPool
}

// Directory resolves profiles for the receiver and the sender. Errors wrap
// persistence.ErrNotFound when no profile matches.
type Directory interface {
	// Inbound finds the partner whose remote profile has the AS2 id from and the
	// organization whose local profile has the AS2 id to.
	Inbound(ctx context.Context, from, to AS2ID) (Inbound, error)
	// InboundByParties is Inbound for known party names (an async MDN or a test).
	InboundByParties(ctx context.Context, org, partner string) (Inbound, error)
	// Outbound resolves the profiles for a message from org to partner.
	Outbound(ctx context.Context, org, partner string) (Outbound, error)
}
