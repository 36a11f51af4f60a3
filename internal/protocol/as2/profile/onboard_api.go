package profile

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"wharf/internal/api"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// REST paths of partner onboarding and the presets.
const (
	PartnersPath = "/api/v1/as2/partners"
	PresetsPath  = "/api/v1/as2/presets"
)

// OnboardingRoutes are the REST operations that set a partner up in one call, list the
// presets and apply one.
func (s *Store) OnboardingRoutes() []module.APIRoute {
	return []module.APIRoute{
		{Method: "GET", Path: PresetsPath, Handle: listPresets},
		{Method: "POST", Path: PartnersPath, Body: module.BodyJSON, Handle: s.onboardPartner},
		{Method: "POST", Path: RemoteProfilesPath + "/{partner}/preset", Body: module.BodyJSON, Handle: s.applyPresetRoute},
	}
}

// presetView is a preset as REST shows it: its fields by JSON name and for people.
type presetView struct {
	Preset
	Described []PresetLine `json:"described"`
}

func listPresets(*http.Request) (int, any, error) {
	out := make([]presetView, len(Presets))
	for i, p := range Presets {
		out[i] = presetView{Preset: p, Described: p.Described()}
	}
	return http.StatusOK, map[string]any{"presets": out}, nil
}

// onboardBody is POST /as2/partners: a profile file, or the AS2 id, URL and PEM
// certificate typed.
type onboardBody struct {
	Name        string          `json:"name"`
	DisplayName string          `json:"display_name"`
	ProfileFile json.RawMessage `json:"profile_file"`
	AS2ID       string          `json:"as2_id"`
	EndpointURL string          `json:"endpoint_url"`
	Certificate string          `json:"certificate"`
	Preset      string          `json:"preset"`
}

func (s *Store) onboardPartner(r *http.Request) (int, any, error) {
	var b onboardBody
	if err := api.DecodeJSON(r, &b); err != nil {
		return 0, nil, err
	}
	in := NewPartner{Name: b.Name, DisplayName: b.DisplayName, AS2ID: b.AS2ID, EndpointURL: b.EndpointURL,
		Certificate: []byte(b.Certificate), Preset: b.Preset}
	if len(b.ProfileFile) > 0 && string(b.ProfileFile) != "null" {
		f, err := ParsePartnerFile(b.ProfileFile)
		if err != nil {
			return 0, nil, PartnerFileFieldError("profile_file", err)
		}
		in.File = &f
	}
	out, err := s.Onboard(r.Context(), in)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.view(r.Context(), out.Remote, certCache{})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"partner": out.Party, "remote_profile": v, "certificate_ids": out.CertificateIDs}, nil
}

func (s *Store) applyPresetRoute(r *http.Request) (int, any, error) {
	partner, err := pathParty(r, "partner")
	if err != nil {
		return 0, nil, err
	}
	var b struct {
		Preset string `json:"preset"`
	}
	if err := api.DecodeJSON(r, &b); err != nil {
		return 0, nil, err
	}
	out, err := s.ApplyPreset(r.Context(), partner, b.Preset)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.view(r.Context(), out, certCache{})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// ApplyPreset sets the named preset's fields on the partner's remote profile.
func (s *Store) ApplyPreset(ctx context.Context, partner persistence.PartyName, name string) (Remote, error) {
	p, err := FindPreset(name)
	if err != nil {
		return Remote{}, err
	}
	r, err := s.GetRemote(ctx, partner)
	if err != nil {
		return Remote{}, err
	}
	if err := p.ApplyTo(&r); err != nil {
		return Remote{}, err
	}
	return s.UpdateRemote(ctx, r)
}

// PartnerFileFieldError turns ParsePartnerFile's refusal into a field error of field,
// every problem of the file in its message.
func PartnerFileFieldError(field string, err error) error {
	var msgs []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		msgs = append(msgs, e.Error())
	}
	walk(err)
	if !errors.Is(err, ErrPartnerFile) {
		return err
	}
	return fieldErr(field, "not a usable partner profile file: "+strings.Join(msgs, "; "))
}
