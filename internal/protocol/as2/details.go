package as2

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

// Our AS2 details are what a partner needs from us to set us up: the organization's AS2
// id, the addresses partners reach its receiver at, its certificates and the algorithms
// it accepts. The organization's page shows them as a card, and the partner profile file
// carries them to another Wharf.

// receiverAddresses are the URLs partners post messages and async MDNs to.
type receiverAddresses struct {
	Endpoint string
	MDN      string
	// Guess says the host is the receiver's own listening address, which partners on
	// other hosts may not reach; Source says where the host came from.
	Guess  bool
	Source string
}

// addresses builds the receiver's URLs as partners reach them: WHARF_PUBLIC_URL's host
// when that is not a loopback name, else the receiver's bind address (a guess), with the
// receiver's port and paths. The HTTPS listener wins when there are two.
func (rt *Runtime) addresses(ctx context.Context) (receiverAddresses, error) {
	c, err := rt.receiverConfig(ctx)
	if err != nil {
		return receiverAddresses{}, err
	}
	ls := c.Listeners()
	l := ls[len(ls)-1]
	bindHost, port, err := net.SplitHostPort(l.Addr)
	if err != nil {
		return receiverAddresses{}, fmt.Errorf("as2-receiver address %q: %w", l.Addr, err)
	}
	out := receiverAddresses{Source: "the host of WHARF_PUBLIC_URL, with the receiver's port and path"}
	host := ""
	if u, err := url.Parse(rt.core.BaseURL); err == nil && u.Hostname() != "" && !isLoopbackHost(u.Hostname()) {
		host = u.Hostname()
	}
	if host == "" {
		out.Guess = true
		host = bindHost
		out.Source = "a guess from the receiver's listening address " + l.Addr +
			"; partners on other hosts may not reach it: set WHARF_PUBLIC_URL to the name partners use"
		if ip := net.ParseIP(bindHost); ip != nil && ip.IsUnspecified() {
			// Listening on every address: the base URL's host is as good a guess as any.
			host = "localhost"
			if u, err := url.Parse(rt.core.BaseURL); err == nil && u.Hostname() != "" {
				host = u.Hostname()
			}
		}
	}
	base := l.Scheme() + "://" + net.JoinHostPort(host, port)
	out.Endpoint, out.MDN = base+c.Path, base+c.MDNPath
	return out, nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Algorithms the receiver opens, as the profile file and the card list them.
var (
	acceptedSigning = []profile.SigningAlgorithm{profile.SignSHA256, profile.SignSHA384, profile.SignSHA512}
	// 3DES is opened inbound, never sent.
	acceptedEncryption = []profile.EncryptionAlgorithm{profile.EncryptAES128CBC, profile.EncryptAES192CBC,
		profile.EncryptAES256CBC, profile.EncryptAES128GCM, profile.EncryptAES256GCM, profile.Encrypt3DES}
	acceptedKeyTransports = []profile.KeyTransport{profile.KeyTransportRSA, profile.KeyTransportOAEP}
)

// ourDetails is the organization's partner profile file, the certificates it names and
// the receiver's addresses.
type ourDetails struct {
	File                profile.PartnerFile
	Signing, Encryption persistence.Certificate
	Addresses           receiverAddresses
}

func (rt *Runtime) ourDetails(ctx context.Context, org persistence.PartyName) (ourDetails, error) {
	party, err := rt.core.Store.GetParty(ctx, persistence.PartyOrganization, org)
	if err != nil {
		return ourDetails{}, err
	}
	l, err := rt.profiles.GetLocal(ctx, org)
	if err != nil {
		return ourDetails{}, err
	}
	if l.SigningCertificateID == 0 || l.DecryptionCertificateID == 0 {
		return ourDetails{}, &persistence.FieldError{Field: "organization",
			Message: fmt.Sprintf("the AS2 local profile of %q needs a signing and a decryption certificate before partners can be given its details", org)}
	}
	var d ourDetails
	if d.Signing, err = rt.core.Store.GetCertificate(ctx, l.SigningCertificateID); err != nil {
		return ourDetails{}, fmt.Errorf("read the signing certificate: %w", err)
	}
	if d.Encryption, err = rt.core.Store.GetCertificate(ctx, l.DecryptionCertificateID); err != nil {
		return ourDetails{}, fmt.Errorf("read the decryption certificate: %w", err)
	}
	if d.Addresses, err = rt.addresses(ctx); err != nil {
		return ourDetails{}, err
	}
	def := profile.NewRemote()
	// The seeded display name is every fresh installation's; the partner's page would
	// show all its partners alike by it, so the file leaves it out.
	displayName := party.DisplayName
	if displayName == persistence.SeedOrganizationDisplayName {
		displayName = ""
	}
	d.File = profile.PartnerFile{
		Format:      profile.PartnerFileFormat,
		Name:        string(org),
		DisplayName: displayName,
		AS2ID:       l.AS2ID,
		EndpointURL: d.Addresses.Endpoint,
		AsyncMDNURL: d.Addresses.MDN,
		Certificates: profile.PartnerFileCertificates{
			Signing:    profile.CertificatePEM(d.Signing.DER),
			Encryption: profile.CertificatePEM(d.Encryption.DER),
		},
		Preferences: profile.PartnerFilePreferences{
			SigningAlgorithm:    def.SigningAlgorithm,
			EncryptionAlgorithm: def.EncryptionAlgorithm,
			KeyTransport:        def.KeyTransport,
			Compress:            def.Compress,
		},
		Accepts: profile.PartnerFileAccepts{
			SigningAlgorithms:    acceptedSigning,
			EncryptionAlgorithms: acceptedEncryption,
			KeyTransports:        acceptedKeyTransports,
		},
		MDN: profile.PartnerFileMDN{
			Modes:        []profile.MDNMode{profile.MDNSync, profile.MDNAsync},
			Signed:       true,
			MICAlgorithm: def.MDNMICAlgorithm,
		},
		MaxMessageSizeMiB: l.MaxMessageSizeMiB,
	}
	return d, nil
}

func joinNames[T ~string](all []T) string {
	parts := make([]string, len(all))
	for i, v := range all {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}
