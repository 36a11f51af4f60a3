package as2

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

var _ module.PartnerWizard = (*Runtime)(nil)

// The first step of the partner wizard: a profile file, or the AS2 id, the address and
// the certificate (uploaded or pasted).
var wizardFields = []module.PanelField{
	{Name: "profile_file", Label: "Profile file", Kind: module.FieldFile,
		Hint: "The file the partner's Wharf offers as \"Download the profile file\". It fills in everything below; leave those fields empty."},
	{Name: "as2_id", Label: "The partner's AS2 id", Kind: module.FieldText,
		Hint: "As the partner gave it, for example ACME-AS2."},
	{Name: "endpoint_url", Label: "Where to send messages", Kind: module.FieldURL,
		Hint: "The partner's AS2 address, for example https://as2.acme.example/as2."},
	{Name: "certificate", Label: "The partner's certificate", Kind: module.FieldFile,
		Hint: "A .pem, .cer or .crt file with the partner's certificate only, never a private key."},
	{Name: "certificate_pem", Label: "…or paste the certificate", Kind: module.FieldTextarea,
		Hint: "The text from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----."},
}

// WizardFields are the first step's inputs.
func (rt *Runtime) WizardFields() []module.PanelField {
	out := make([]module.PanelField, len(wizardFields))
	copy(out, wizardFields)
	return out
}

// WizardCreate creates the partner, its certificate and its remote profile.
func (rt *Runtime) WizardCreate(ctx context.Context, form url.Values, files map[string][]byte) (persistence.PartyName, error) {
	in := profile.NewPartner{
		Name:        strings.TrimSpace(form.Get("name")),
		DisplayName: strings.TrimSpace(form.Get("display_name")),
		AS2ID:       strings.TrimSpace(form.Get("as2_id")),
		EndpointURL: strings.TrimSpace(form.Get("endpoint_url")),
		Certificate: files["certificate"],
	}
	if pasted := strings.TrimSpace(form.Get("certificate_pem")); pasted != "" {
		if len(in.Certificate) > 0 {
			return "", &persistence.FieldError{Field: "certificate_pem", Message: "upload the certificate or paste it, not both"}
		}
		in.Certificate = []byte(pasted)
	}
	if raw := files["profile_file"]; len(raw) > 0 {
		f, err := profile.ParsePartnerFile(raw)
		if err != nil {
			return "", profile.PartnerFileFieldError("profile_file", err)
		}
		in.File = &f
	}
	out, err := rt.profiles.Onboard(ctx, in)
	if err != nil {
		return "", err
	}
	return out.Party.Name, nil
}

// WizardPresets are the security presets with what each sets.
func (rt *Runtime) WizardPresets() []module.WizardPreset {
	out := make([]module.WizardPreset, 0, len(profile.Presets))
	for _, p := range profile.Presets {
		wp := module.WizardPreset{Name: p.Name, Label: p.Label, Summary: p.Summary}
		for _, l := range p.Described() {
			wp.Sets = append(wp.Sets, module.PanelDetail{Label: l.Label, Value: l.Value})
		}
		out = append(out, wp)
	}
	return out
}

// WizardApplyPreset applies a preset to the partner's remote profile.
func (rt *Runtime) WizardApplyPreset(ctx context.Context, partner persistence.PartyName, preset string) error {
	_, err := rt.profiles.ApplyPreset(ctx, partner, preset)
	return err
}

// WizardTools are the connection check, then the test message.
func (rt *Runtime) WizardTools() []module.PanelAction {
	return []module.PanelAction{
		{Name: actionCheck, Label: "Check the connection"},
		{Name: actionTest, Label: "Send a test message"},
	}
}

// partnerProfileRoute is GET /as2/local-profiles/{organization}/partner-profile: the
// organization's partner profile file.
func (rt *Runtime) partnerProfileRoute() module.APIRoute {
	return module.APIRoute{Method: "GET", Path: profile.LocalProfilesPath + "/{organization}/partner-profile",
		Handle: func(r *http.Request) (int, any, error) {
			org, err := persistence.ParsePartyName(r.PathValue("organization"))
			if err != nil {
				return 0, nil, &persistence.FieldError{Field: "organization", Message: err.Error()}
			}
			d, err := rt.ourDetails(r.Context(), org)
			if errors.Is(err, errNoReceiver) {
				return 0, nil, &module.APIError{Status: http.StatusConflict, Code: "NO_AS2_RECEIVER", Message: err.Error()}
			}
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, d.File, nil
		}}
}
