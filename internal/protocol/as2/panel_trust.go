package as2

import "wharf/internal/protocol/as2/profile"

// mdnSignerText names the certificate that signs the organization's MDNs.
func mdnSignerText(l profile.Local) string {
	if l.MDNSigningCertificateID == nil {
		return "the signing certificate"
	}
	return certText(*l.MDNSigningCertificateID)
}

// trustText says how the partner's endpoint certificate is trusted.
func trustText(r profile.Remote) string {
	switch r.TLSTrust {
	case profile.TLSTrustProfile:
		return "the profile's roots " + idsText(r.TLSTrustCertificateIDs)
	case profile.TLSTrustPinned:
		return "pinned certificate SHA-256 " + r.TLSPinnedSHA256
	}
	if len(r.TLSTrustCertificateIDs) > 0 {
		return "system roots and " + idsText(r.TLSTrustCertificateIDs)
	}
	return "system roots"
}
