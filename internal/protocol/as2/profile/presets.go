package profile

import (
	"encoding/json"
	"fmt"
	"slices"
)

// A security preset is a named set of remote profile fields, applied in one step when a
// partner is set up (the wizard, REST) and shown with what it sets. Presets are data: the
// table below is the only place they are defined, and docs/as2.md lists it.

// Preset is one named set of remote profile fields.
type Preset struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Summary says in one sentence whom the preset is for.
	Summary string `json:"summary"`
	// Sets are the fields the preset sets, by their JSON name, in the form's order.
	Sets []PresetField `json:"sets"`
}

// PresetField is one field a preset sets.
type PresetField struct {
	Field string `json:"field"`
	Value any    `json:"value"`
}

// The names of the presets.
const (
	PresetWharf   = "wharf"
	PresetOlder   = "older"
	PresetOpenAS2 = "openas2"
	PresetPyAS2   = "pyas2"
	PresetIBM     = "ibm"
)

// Presets are the security presets, the default first.
var Presets = []Preset{
	{
		Name: PresetWharf, Label: "Wharf defaults",
		Summary: "Everything signed, encrypted and compressed, a signed receipt asked for; for partners on current AS2 products.",
		Sets: []PresetField{
			{"compress", true},
			{"compression_order", string(CompressBeforeSigning)},
			{"signing_algorithm", string(SignSHA256)},
			{"encryption_algorithm", string(EncryptAES256CBC)},
			{"gcm_confirmed", false},
			{"key_transport", string(KeyTransportRSA)},
			{"mdn_mode", string(MDNSync)},
			{"signed_mdn", true},
			{"mdn_mic_algorithm", string(MICSHA256)},
			{"require_signed", true},
			{"require_encrypted", true},
			{"allow_sha1", false},
			{"mic_preference", string(MICPreferAuto)},
			{"algorithm_protection", false},
		},
	},
	{
		Name: PresetOlder, Label: "Compatible with older partners",
		Summary: "For products from before SHA-2 and compression were common: SHA-1 accepted from the partner, nothing compressed, AES-128, the MIC as requested.",
		Sets: []PresetField{
			{"compress", false},
			{"signing_algorithm", string(SignSHA256)},
			{"encryption_algorithm", string(EncryptAES128CBC)},
			{"gcm_confirmed", false},
			{"key_transport", string(KeyTransportRSA)},
			{"mdn_mic_algorithm", string(MICSHA256)},
			{"allow_sha1", true},
			{"mic_preference", string(MICPreferRequested)},
			{"algorithm_protection", false},
		},
	},
	{
		Name: PresetOpenAS2, Label: "OpenAS2",
		Summary: "OpenAS2 resends a document under a new Message-ID when a receipt is lost, wants the MIC it asked for, and cannot open AES-GCM.",
		Sets: []PresetField{
			{"duplicate_content", string(DuplicateRefuse)},
			{"duplicate_content_window_hours", 24},
			{"mic_preference", string(MICPreferRequested)},
			{"encryption_algorithm", string(EncryptAES256CBC)},
			{"gcm_confirmed", false},
		},
	},
	{
		Name: PresetPyAS2, Label: "pyas2 / pyas2-lib",
		Summary: "pyas2-lib checks the MIC with its signature's digest and cannot open AES-GCM.",
		Sets: []PresetField{
			{"mic_preference", string(MICPreferSignature)},
			{"encryption_algorithm", string(EncryptAES256CBC)},
			{"gcm_confirmed", false},
		},
	},
	{
		Name: PresetIBM, Label: "IBM (CMS algorithm protection)",
		Summary: "Some IBM products refuse signatures without the CMS algorithm protection attribute (RFC 6211).",
		Sets: []PresetField{
			{"algorithm_protection", true},
		},
	},
}

// FindPreset returns the preset of that name.
func FindPreset(name string) (Preset, error) {
	i := slices.IndexFunc(Presets, func(p Preset) bool { return p.Name == name })
	if i < 0 {
		names := make([]string, len(Presets))
		for j, p := range Presets {
			names[j] = p.Name
		}
		return Preset{}, fieldErr("preset", fmt.Sprintf("unknown preset %q; one of %v", name, names))
	}
	return Presets[i], nil
}

// ApplyTo sets the preset's fields on r, leaving every other field as it is.
func (p Preset) ApplyTo(r *Remote) error {
	for _, f := range p.Sets {
		raw, err := json.Marshal(f.Value)
		if err != nil {
			return fmt.Errorf("preset %s: %w", p.Name, err)
		}
		if err := decodeKey(f.Field, raw, r); err != nil {
			return fmt.Errorf("preset %s: %w", p.Name, err)
		}
	}
	return nil
}

// Described is the preset's fields as the form labels them, with their values in words.
func (p Preset) Described() []PresetLine {
	out := make([]PresetLine, 0, len(p.Sets))
	for _, f := range p.Sets {
		label := f.Field
		if i := slices.IndexFunc(remoteForm, func(ff formField) bool { return ff.name == f.Field }); i >= 0 {
			label = remoteForm[i].label
		}
		value := fmt.Sprint(f.Value)
		if b, ok := f.Value.(bool); ok {
			value = yesNo(b)
		}
		out = append(out, PresetLine{Field: f.Field, Label: label, Value: value})
	}
	return out
}

// PresetLine is one field a preset sets, for people.
type PresetLine struct {
	Field string `json:"field"`
	Label string `json:"label"`
	Value string `json:"value"`
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
