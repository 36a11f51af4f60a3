package profile

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"wharf/internal/certs"
	"wharf/internal/persistence"
	"wharf/internal/records"
)

// NewPartner is what sets up a partner in one step: the party, its certificate and its
// remote profile, from a profile file or from the values typed.
type NewPartner struct {
	// Name is the party's name; empty with a profile file, it is derived from the file.
	Name        string
	DisplayName string
	// File, when set, gives the AS2 id, the URL, the certificates and the preferences;
	// the typed values below must then be empty.
	File        *ParsedPartnerFile
	AS2ID       string
	EndpointURL string
	// Certificate is the partner's certificate as PEM or DER, without a private key.
	Certificate []byte
	// Preset, when set, is applied after the file's preferences.
	Preset string
}

// OnboardedPartner is what Onboard created.
type OnboardedPartner struct {
	Party  persistence.Party
	Remote Remote
	// CertificateIDs are the partner certificates the profile names (stored now, or
	// found stored already).
	CertificateIDs []int64
}

// Onboard creates the partner, stores its certificates and creates its remote profile,
// after checking everything it can first; a refusal names each field that is wrong
// (name, display_name, as2_id, endpoint_url, certificate, profile_file, preset). When a
// later write fails, what the earlier ones created is removed again.
func (s *Store) Onboard(ctx context.Context, in NewPartner) (OnboardedPartner, error) {
	rem, chain, name, err := s.planOnboarding(ctx, &in)
	if err != nil {
		return OnboardedPartner{}, err
	}
	party, err := records.CreateParty(ctx, s.core, persistence.PartyPartner, records.PartyInput{Name: string(name), DisplayName: in.DisplayName})
	if errors.Is(err, persistence.ErrConflict) {
		return OnboardedPartner{}, fieldErr("name", fmt.Sprintf("a partner named %q exists already", name))
	}
	if err != nil {
		return OnboardedPartner{}, err
	}
	ids, created, err := s.storePartnerCertificates(ctx, name, chain)
	if err != nil {
		return OnboardedPartner{}, errors.Join(err, s.undoOnboarding(ctx, name, created))
	}
	rem.Partner, rem.PartnerCertificateIDs = name, ids
	out, err := s.CreateRemote(ctx, rem)
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) && ce.Code == CodeAS2IDTaken {
			err = fieldErr("as2_id", ce.Message)
		}
		return OnboardedPartner{}, errors.Join(err, s.undoOnboarding(ctx, name, created))
	}
	return OnboardedPartner{Party: party, Remote: out, CertificateIDs: ids}, nil
}

// planOnboarding checks the input and returns the profile to create (without its party
// and certificate ids), the certificates to store and the party's name; a display name
// left empty takes the file's.
func (s *Store) planOnboarding(ctx context.Context, in *NewPartner) (Remote, []*x509.Certificate, persistence.PartyName, error) {
	var errs []error
	rem := NewRemote()
	var chain []*x509.Certificate
	name := in.Name
	if in.File != nil {
		if in.AS2ID != "" || in.EndpointURL != "" || len(in.Certificate) > 0 {
			errs = append(errs, fieldErr("profile_file", "the profile file gives the AS2 id, URL and certificate; leave those fields empty when importing one"))
		}
		in.File.ApplyTo(&rem)
		chain = in.File.Certificates()
		if name == "" {
			name = SuggestPartyName(string(in.File.File.AS2ID), in.File.File.Name)
		}
		if in.DisplayName == "" {
			in.DisplayName = in.File.File.DisplayName
		}
	} else {
		if id, err := ParseAS2ID(in.AS2ID); err != nil {
			errs = append(errs, fieldErr("as2_id", strings.TrimPrefix(err.Error(), "invalid AS2 id: ")))
		} else {
			rem.AS2ID = id
		}
		if err := checkURL(in.EndpointURL); err != nil {
			errs = append(errs, fieldErr("endpoint_url", err.Error()))
		} else {
			rem.EndpointURL = in.EndpointURL
		}
		if c, err := partnerCertificate(in.Certificate); err != nil {
			errs = append(errs, fieldErr("certificate", err.Error()))
		} else {
			chain = []*x509.Certificate{c}
		}
		if name == "" {
			name = SuggestPartyName(in.AS2ID, "")
		}
	}
	party, err := persistence.ParsePartyName(name)
	if name == "" {
		if in.Name == "" && (in.File != nil || in.AS2ID != "") {
			errs = append(errs, fieldErr("name", "required: no name can be made from the AS2 id; type one"))
		} else {
			errs = append(errs, fieldErr("name", "required"))
		}
	} else if err != nil {
		errs = append(errs, fieldErr("name", err.Error()))
	} else if _, err := s.core.GetParty(ctx, persistence.PartyPartner, party); err == nil {
		errs = append(errs, fieldErr("name", fmt.Sprintf("a partner named %q exists already", party)))
	} else if !errors.Is(err, persistence.ErrNotFound) {
		return Remote{}, nil, "", fmt.Errorf("check partner %q: %w", party, err)
	}
	if _, err := records.ParseDisplayName(in.DisplayName); err != nil {
		errs = append(errs, err)
	}
	if in.Preset != "" {
		p, err := FindPreset(in.Preset)
		if err == nil {
			err = p.ApplyTo(&rem)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Remote{}, nil, "", errors.Join(errs...)
	}
	// Checked with stand-ins for what is written later, so that a profile the rules
	// refuse writes nothing.
	check := rem
	check.Partner, check.PartnerCertificateIDs = party, []int64{1}
	if err := check.Validate(); err != nil {
		return Remote{}, nil, "", err
	}
	if existing, err := s.RemoteByAS2ID(ctx, rem.AS2ID); err == nil {
		return Remote{}, nil, "", fieldErr("as2_id", fmt.Sprintf("AS2 id %q is taken by the AS2 profile of partner %q", rem.AS2ID, existing.Partner))
	} else if !errors.Is(err, persistence.ErrNotFound) {
		return Remote{}, nil, "", err
	}
	return rem, chain, party, nil
}

// partnerCertificate reads an uploaded or pasted partner certificate: exactly one, and no
// private key (which would be ours, not the partner's).
func partnerCertificate(data []byte) (*x509.Certificate, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errors.New("required: upload the partner's certificate, paste it, or import a profile file")
	}
	parsed, err := certs.Parse(data, "")
	if err != nil {
		return nil, err
	}
	if len(parsed) != 1 {
		return nil, fmt.Errorf("the file holds %d certificates; give the partner's one certificate", len(parsed))
	}
	if parsed[0].Key != nil {
		return nil, errors.New("the file holds a private key: a partner sends its certificate only, so this looks like one of our own; upload it on the certificates page instead")
	}
	return parsed[0].Cert, nil
}

// storePartnerCertificates stores the certificates, or finds them stored already, and
// returns their ids and those it created.
func (s *Store) storePartnerCertificates(ctx context.Context, partner persistence.PartyName, chain []*x509.Certificate) (ids, created []int64, err error) {
	stored, _, err := s.core.ListCertificates(ctx, persistence.ListOptions{Limit: 1000})
	if err != nil {
		return nil, nil, fmt.Errorf("list certificates: %w", err)
	}
	byPrint := map[string]persistence.Certificate{}
	for _, c := range stored {
		byPrint[c.Fingerprint] = c
	}
	for _, c := range chain {
		if have, ok := byPrint[CertificateFingerprint(c.Raw)]; ok {
			if have.HasPrivateKey {
				return nil, created, fieldErr("certificate", fmt.Sprintf("certificate %s (%s) is one of our own, with its private key; a partner's certificate is the partner's", have.Fingerprint[:16], have.Subject))
			}
			ids = append(ids, have.ID)
			continue
		}
		recs, err := certs.Records([]certs.Parsed{{Cert: c}}, "AS2 certificate of partner "+string(partner), nil)
		if err != nil {
			return nil, created, err
		}
		got, err := s.core.CreateCertificates(ctx, recs)
		if err != nil {
			return nil, created, fmt.Errorf("store the certificate of partner %q: %w", partner, err)
		}
		ids = append(ids, got[0].ID)
		created = append(created, got[0].ID)
	}
	return ids, created, nil
}

// undoOnboarding removes what a failed Onboard created: the certificates it stored and
// the party. It runs even when ctx is cancelled.
func (s *Store) undoOnboarding(ctx context.Context, partner persistence.PartyName, certIDs []int64) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, id := range certIDs {
		if err := s.core.DeleteCertificate(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("remove certificate %d again: %w", id, err))
		}
	}
	if err := s.core.DeleteParty(ctx, persistence.PartyPartner, partner); err != nil {
		errs = append(errs, fmt.Errorf("remove partner %q again: %w", partner, err))
	}
	return errors.Join(errs...)
}

// SuggestPartyName derives a party name from an AS2 id or, failing that, an
// organization's name (which is often "local" on both sides): lower case, runs of other characters as one "-", at most 64 characters. It
// returns "" when nothing usable is left.
func SuggestPartyName(as2ID, name string) string {
	for _, src := range []string{as2ID, name} {
		var b strings.Builder
		dash := false
		for _, c := range strings.ToLower(src) {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
				b.WriteRune(c)
				dash = false
			case !dash && b.Len() > 0:
				b.WriteByte('-')
				dash = true
			}
			if b.Len() >= 64 {
				break
			}
		}
		out := strings.TrimRight(b.String(), "-")
		if len(out) > 64 {
			out = strings.TrimRight(out[:64], "-")
		}
		if _, err := persistence.ParsePartyName(out); err == nil {
			return out
		}
	}
	return ""
}
