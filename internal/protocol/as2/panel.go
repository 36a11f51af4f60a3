package as2

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"wharf/internal/certs"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

var _ module.PartyPanels = (*Runtime)(nil)

// Actions of the profile panels.
const (
	actionCheck  = "check"
	actionTest   = "test-message"
	actionDelete = "delete"
)

// PartyPanel is the organization's local profile or the partner's remote profile.
func (rt *Runtime) PartyPanel(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) (module.PartyPanel, bool, error) {
	if kind != persistence.PartyOrganization && kind != persistence.PartyPartner {
		return module.PartyPanel{}, false, nil
	}
	// Certificates are picked from lists and named by subject, never by id.
	choices, err := certs.Choices(ctx, rt.core.Store, time.Now())
	if err != nil {
		return module.PartyPanel{}, false, err
	}
	names := namesOf(choices)
	switch kind {
	case persistence.PartyOrganization:
		p := module.PartyPanel{Module: ModuleName, Title: "AS2 local profile",
			Empty: "No AS2 local profile: partners cannot send to this organization over AS2, nor can it send."}
		l, err := rt.profiles.GetLocal(ctx, name)
		switch {
		case isNotFound(err):
			p.Fields = offerNewKey(profile.CertificateSelects(profile.LocalFields(profile.NewLocal()), choices), choices, true)
			return p, true, nil
		case err != nil:
			return module.PartyPanel{}, false, err
		}
		p.Exists = true
		p.Fields = offerNewKey(profile.CertificateSelects(profile.LocalFields(l), choices), choices, false)
		p.Details = []module.PanelDetail{
			{Label: "AS2 id", Value: string(l.AS2ID)},
			{Label: "Signing certificate", Value: names.name(l.SigningCertificateID)},
			{Label: "Decryption certificate", Value: names.name(l.DecryptionCertificateID)},
			{Label: "MDN signing certificate", Value: mdnSignerText(l, names)},
			{Label: "Chain in signatures", Value: yesNo(l.IncludeChain)},
			{Label: "MDN notification to", Value: orNone(l.MDNNotificationTo)},
			{Label: "Largest inbound message", Value: strconv.Itoa(l.MaxMessageSizeMiB) + " MiB"},
			{Label: "Updated", Value: l.UpdatedAt.UTC().Format(time.RFC3339)},
		}
		p.Actions = []module.PanelAction{
			{Name: actionDelete, Label: "Delete AS2 profile", Confirm: "Delete the AS2 local profile of " + string(name) + "?"},
		}
		card, err := rt.detailsCard(ctx, name)
		if err != nil {
			return module.PartyPanel{}, false, err
		}
		p.Cards = []module.PanelCard{card}
		return p, true, nil
	case persistence.PartyPartner:
		p := module.PartyPanel{Module: ModuleName, Title: "AS2 profile",
			Empty: "No AS2 profile: messages to this partner cannot go through an as2-sender, nor are its AS2 messages accepted."}
		r, err := rt.profiles.GetRemote(ctx, name)
		switch {
		case isNotFound(err):
			p.Fields = profile.CertificateSelects(profile.RemoteFields(profile.NewRemote()), choices)
			return p, true, nil
		case err != nil:
			return module.PartyPanel{}, false, err
		}
		p.Exists = true
		p.Fields = profile.CertificateSelects(profile.RemoteFields(r), choices)
		p.Details = []module.PanelDetail{
			{Label: "AS2 id", Value: string(r.AS2ID)},
			{Label: "Endpoint URL", Value: r.EndpointURL},
			{Label: "Partner certificates", Value: names.names(r.PartnerCertificateIDs)},
			{Label: "Outbound", Value: fmt.Sprintf("signed %s, encrypted %s, compressed %s", r.SigningAlgorithm, r.EncryptionAlgorithm, compressionText(r))},
			{Label: "Receipt", Value: fmt.Sprintf("MDN %s, signed %s", r.MDNMode, yesNo(r.SignedMDN))},
			{Label: "Inbound", Value: fmt.Sprintf("signature required %s, encryption required %s", yesNo(r.RequireSigned), yesNo(r.RequireEncrypted))},
			{Label: "TLS trust", Value: trustText(r, names)},
			{Label: "Updated", Value: r.UpdatedAt.UTC().Format(time.RFC3339)},
		}
		p.Actions = []module.PanelAction{
			{Name: actionCheck, Label: "Check the connection"},
			{Name: actionTest, Label: "Send a test message"},
			{Name: actionDelete, Label: "Delete AS2 profile", Confirm: "Delete the AS2 profile of " + string(name) + "?"},
		}
		return p, true, nil
	}
	return module.PartyPanel{}, false, nil
}

// SavePartyPanel creates or replaces the profile from the form, by the REST rules.
func (rt *Runtime) SavePartyPanel(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName, form url.Values) error {
	var err error
	switch kind {
	case persistence.PartyOrganization:
		err = rt.saveLocalPanel(ctx, name, form)
	case persistence.PartyPartner:
		_, err = rt.profiles.SaveRemoteForm(ctx, name, form)
	default:
		err = fmt.Errorf("as2: no profile for a %s: %w", kind, persistence.ErrNotFound)
	}
	return err
}

// RunPartyAction runs the connection check, sends a test message, or deletes the profile.
func (rt *Runtime) RunPartyAction(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName, action, actor string) (module.ActionResult, error) {
	switch {
	case action == actionDelete && kind == persistence.PartyOrganization:
		if err := rt.profiles.DeleteLocal(ctx, name); err != nil {
			return module.ActionResult{}, err
		}
		return module.ActionResult{OK: true, Summary: "The AS2 local profile is deleted."}, nil
	case action == actionDelete && kind == persistence.PartyPartner:
		if err := rt.profiles.DeleteRemote(ctx, name); err != nil {
			return module.ActionResult{}, err
		}
		return module.ActionResult{OK: true, Summary: "The AS2 profile is deleted."}, nil
	case action == actionCheck && kind == persistence.PartyPartner:
		org, err := rt.defaultOrganization(ctx)
		if err != nil {
			return module.ActionResult{}, err
		}
		out, err := rt.dir.Outbound(ctx, org, string(name))
		if err != nil {
			return module.ActionResult{Summary: "Not checked: " + err.Error()}, nil
		}
		res := checkConnection(ctx, out, rt.core.ProductName())
		ar := module.ActionResult{OK: res.OK}
		for _, st := range res.Steps {
			ar.Steps = append(ar.Steps, module.ActionStep{Name: st.Step, OK: st.OK, Detail: st.Detail})
		}
		if res.OK {
			ar.Summary = "The endpoint " + res.EndpointURL + " answers."
		} else {
			ar.Summary = "The endpoint " + res.EndpointURL + " cannot be reached."
		}
		return ar, nil
	case action == actionTest && kind == persistence.PartyPartner:
		m, err := rt.sendTestMessage(ctx, name, testMessageInput{}, actor)
		var fe *persistence.FieldError
		switch {
		case errors.As(err, &fe):
			return module.ActionResult{Summary: "Not sent: " + fe.Message}, nil
		case errors.Is(err, persistence.ErrNotFound), errors.Is(err, module.ErrUnknownParty):
			return module.ActionResult{Summary: "Not sent: " + err.Error()}, nil
		case err != nil:
			return module.ActionResult{}, err
		}
		return module.ActionResult{OK: true, MessageID: m.ID,
			Summary: fmt.Sprintf("Test message %d sent from %s to %s.", m.ID, m.From, m.To)}, nil
	}
	return module.ActionResult{}, fmt.Errorf("as2: no action %q for a %s: %w", action, kind, persistence.ErrNotFound)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// compressionText says whether the partner's messages are compressed and, when they are
// signed too, on which side of the signature.
func compressionText(r profile.Remote) string {
	if !r.Compress || r.SigningAlgorithm == profile.SignNone {
		return yesNo(r.Compress)
	}
	return yesNo(true) + " (" + strings.ReplaceAll(string(r.CompressionOrder), "_", " ") + ")"
}
