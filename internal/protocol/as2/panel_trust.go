package as2

import (
	"strconv"
	"strings"
	"time"

	"wharf/internal/certs"
	"wharf/internal/protocol/as2/profile"
)

// certNames names stored certificates by subject and expiry, as the panels show them.
type certNames map[int64]certs.Choice

func namesOf(choices []certs.Choice) certNames {
	out := make(certNames, len(choices))
	for _, c := range choices {
		out[c.ID] = c
	}
	return out
}

// name is the certificate's subject and expiry; "none" for 0.
func (n certNames) name(id int64) string {
	if id == 0 {
		return "none"
	}
	c, ok := n[id]
	if !ok {
		return "certificate " + strconv.FormatInt(id, 10) + " (missing)"
	}
	return c.Subject + " (until " + c.NotAfter.UTC().Format(time.DateOnly) + ")"
}

func (n certNames) names(ids []int64) string {
	if len(ids) == 0 {
		return "none"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = n.name(id)
	}
	return strings.Join(parts, "; ")
}

// mdnSignerText names the certificate that signs the organization's MDNs.
func mdnSignerText(l profile.Local, n certNames) string {
	if l.MDNSigningCertificateID == nil {
		return "the signing certificate"
	}
	return n.name(*l.MDNSigningCertificateID)
}

// trustText says how the partner's endpoint certificate is trusted.
func trustText(r profile.Remote, n certNames) string {
	switch r.TLSTrust {
	case profile.TLSTrustProfile:
		return "the profile's roots: " + n.names(r.TLSTrustCertificateIDs)
	case profile.TLSTrustPinned:
		return "pinned certificate SHA-256 " + r.TLSPinnedSHA256
	}
	if len(r.TLSTrustCertificateIDs) > 0 {
		return "system roots and " + n.names(r.TLSTrustCertificateIDs)
	}
	return "system roots"
}
