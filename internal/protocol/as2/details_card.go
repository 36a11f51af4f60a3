package as2

import (
	"context"
	"errors"
	"fmt"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

var _ module.PartyDownloads = (*Runtime)(nil)

// The files the "Our AS2 details" card offers.
const (
	downloadProfile       = "profile"
	downloadSigningPEM    = "signing.pem"
	downloadSigningDER    = "signing.cer"
	downloadEncryptionPEM = "encryption.pem"
	downloadEncryptionDER = "encryption.cer"
)

// detailsCard is the organization's "Our AS2 details" card. Details that cannot be given
// yet (no certificates, no receiver) make a card that says what is missing.
func (rt *Runtime) detailsCard(ctx context.Context, org persistence.PartyName) (module.PanelCard, error) {
	card := module.PanelCard{Title: "Our AS2 details",
		Intro: "What a partner needs to set us up. Send them the profile file (another Wharf imports it on its new-partner page) or these details."}
	d, err := rt.ourDetails(ctx, org)
	var fe *persistence.FieldError
	switch {
	case errors.As(err, &fe):
		card.Notes = []string{fe.Message}
		return card, nil
	case errors.Is(err, errNoReceiver):
		card.Notes = []string{"Partners have nowhere to send: " + err.Error() + "."}
		return card, nil
	case err != nil:
		return module.PanelCard{}, err
	}
	if d.Addresses.Guess {
		card.Notes = []string{"The addresses below are " + d.Addresses.Source + "."}
	}
	f := d.File
	card.Details = []module.PanelDetail{
		{Label: "Our AS2 id", Value: string(f.AS2ID)},
		{Label: "Partners send messages to", Value: f.EndpointURL},
		{Label: "Partners send asynchronous receipts to", Value: f.AsyncMDNURL},
		{Label: "Signing certificate", Value: certSummary(d.Signing)},
		{Label: "Encryption certificate", Value: certSummary(d.Encryption)},
		{Label: "Signatures we accept", Value: joinNames(f.Accepts.SigningAlgorithms)},
		{Label: "Encryption we accept", Value: joinNames(f.Accepts.EncryptionAlgorithms) + "; key transport " + joinNames(f.Accepts.KeyTransports)},
		{Label: "Receipts we send", Value: "synchronous or asynchronous, signed when asked"},
		{Label: "Largest message", Value: fmt.Sprintf("%d MiB", f.MaxMessageSizeMiB)},
	}
	card.Downloads = []module.PanelDownload{
		{Name: downloadProfile, Label: "Download the profile file"},
		{Name: downloadSigningPEM, Label: "Signing certificate (PEM)"},
		{Name: downloadSigningDER, Label: "Signing certificate (.cer)"},
	}
	if d.Signing.ID != d.Encryption.ID {
		card.Downloads = append(card.Downloads,
			module.PanelDownload{Name: downloadEncryptionPEM, Label: "Encryption certificate (PEM)"},
			module.PanelDownload{Name: downloadEncryptionDER, Label: "Encryption certificate (.cer)"})
	}
	return card, nil
}

func certSummary(c persistence.Certificate) string {
	// The card is shown to operators and passed on to partners in other zones: the
	// expiry names its zone.
	return fmt.Sprintf("%s, valid until %s UTC, SHA-256 %s", c.Subject, c.NotAfter.UTC().Format(time.DateOnly+" 15:04"), c.Fingerprint)
}

// PartyDownload hands out the profile file and the certificates of an organization's
// "Our AS2 details" card.
func (rt *Runtime) PartyDownload(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName, download string) (module.Download, error) {
	if kind != persistence.PartyOrganization {
		return module.Download{}, fmt.Errorf("as2: no download %q for a %s: %w", download, kind, persistence.ErrNotFound)
	}
	d, err := rt.ourDetails(ctx, name)
	if err != nil {
		return module.Download{}, err
	}
	base := profile.SuggestPartyName(string(d.File.AS2ID), string(name))
	cert := func(c persistence.Certificate, what string, der bool) module.Download {
		if der {
			return module.Download{FileName: base + "-" + what + ".cer", ContentType: "application/pkix-cert", Body: c.DER}
		}
		return module.Download{FileName: base + "-" + what + ".pem", ContentType: "application/x-pem-file", Body: []byte(profile.CertificatePEM(c.DER))}
	}
	switch download {
	case downloadProfile:
		body, err := d.File.Marshal()
		if err != nil {
			return module.Download{}, err
		}
		return module.Download{FileName: base + "-as2-profile.json", ContentType: "application/json", Body: body}, nil
	case downloadSigningPEM, downloadSigningDER:
		return cert(d.Signing, "signing", download == downloadSigningDER), nil
	case downloadEncryptionPEM, downloadEncryptionDER:
		return cert(d.Encryption, "encryption", download == downloadEncryptionDER), nil
	}
	return module.Download{}, fmt.Errorf("as2: no download %q: %w", download, persistence.ErrNotFound)
}
