package profile

import (
	"encoding/json"
	"fmt"
	"testing"
)

// oddRemote is a remote profile whose every preset field differs from the defaults, so a
// field a preset leaves alone shows if it moves.
func oddRemote() Remote {
	r := NewRemote()
	r.Partner, r.AS2ID, r.EndpointURL, r.PartnerCertificateIDs = "acme", "ACME", "https://acme.example/as2", []int64{1}
	r.Compress, r.CompressionOrder = false, CompressAfterSigning
	r.SigningAlgorithm, r.EncryptionAlgorithm, r.GCMConfirmed = SignSHA512, EncryptAES256GCM, true
	r.KeyTransport, r.MDNMode, r.SignedMDN, r.MDNMICAlgorithm = KeyTransportOAEP, MDNAsync, false, MICSHA384
	r.RequireSigned, r.RequireEncrypted, r.AllowSHA1 = false, false, true
	r.MICPreference, r.AlgorithmProtection = MICPreferSignature, true
	r.DuplicateContent, r.DuplicateContentWindowH = DuplicateWarn, 72
	return r
}

func asObject(t *testing.T, r Remote) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestPresetsSetExactlyTheirFields applies each preset to two different profiles: its
// fields take its values, every other field keeps its own, and the result is valid.
func TestPresetsSetExactlyTheirFields(t *testing.T) {
	def := NewRemote()
	def.Partner, def.AS2ID, def.EndpointURL, def.PartnerCertificateIDs = "acme", "ACME", "https://acme.example/as2", []int64{1}
	for _, p := range Presets {
		for baseName, base := range map[string]Remote{"defaults": def, "odd": oddRemote()} {
			t.Run(p.Name+"/"+baseName, func(t *testing.T) {
				got := base
				if err := p.ApplyTo(&got); err != nil {
					t.Fatal(err)
				}
				before, after := asObject(t, base), asObject(t, got)
				sets := map[string]bool{}
				for _, f := range p.Sets {
					sets[f.Field] = true
					want, _ := json.Marshal(f.Value)
					if string(after[f.Field]) != string(want) {
						t.Errorf("%s = %s, want %s", f.Field, after[f.Field], want)
					}
				}
				for k, v := range before {
					if !sets[k] && string(after[k]) != string(v) {
						t.Errorf("%s changed from %s to %s, but the preset does not set it", k, v, after[k])
					}
				}
				if err := got.Validate(); err != nil {
					t.Errorf("the profile after the preset is refused: %v", err)
				}
			})
		}
	}
}

func TestPresetValues(t *testing.T) {
	tests := []struct {
		preset string
		check  func(r Remote) error
	}{
		{PresetOpenAS2, func(r Remote) error {
			if r.DuplicateContent != DuplicateRefuse || r.MICPreference != MICPreferRequested || r.EncryptionAlgorithm.GCM() {
				return fmt.Errorf("duplicate_content %s, mic_preference %s, encryption %s", r.DuplicateContent, r.MICPreference, r.EncryptionAlgorithm)
			}
			return nil
		}},
		{PresetPyAS2, func(r Remote) error {
			if r.MICPreference != MICPreferSignature || r.EncryptionAlgorithm.GCM() {
				return fmt.Errorf("mic_preference %s, encryption %s", r.MICPreference, r.EncryptionAlgorithm)
			}
			return nil
		}},
		{PresetOlder, func(r Remote) error {
			if !r.AllowSHA1 || r.Compress {
				return fmt.Errorf("allow_sha1 %v, compress %v", r.AllowSHA1, r.Compress)
			}
			return nil
		}},
		{PresetIBM, func(r Remote) error {
			if !r.AlgorithmProtection {
				return fmt.Errorf("algorithm_protection off")
			}
			return nil
		}},
		{PresetWharf, func(r Remote) error {
			d := NewRemote()
			d.Partner, d.AS2ID, d.EndpointURL, d.PartnerCertificateIDs = r.Partner, r.AS2ID, r.EndpointURL, r.PartnerCertificateIDs
			d.AsyncMDNHosts, d.DuplicateContent, d.DuplicateContentWindowH = r.AsyncMDNHosts, r.DuplicateContent, r.DuplicateContentWindowH
			if a, b := asObjectErr(r), asObjectErr(d); a != b {
				return fmt.Errorf("not the defaults:\n%s\n%s", a, b)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			p, err := FindPreset(tt.preset)
			if err != nil {
				t.Fatal(err)
			}
			r := oddRemote()
			if err := p.ApplyTo(&r); err != nil {
				t.Fatal(err)
			}
			if err := tt.check(r); err != nil {
				t.Error(err)
			}
			for _, l := range p.Described() {
				if l.Label == l.Field {
					t.Errorf("field %s has no label for people", l.Field)
				}
			}
		})
	}
	if _, err := FindPreset("mendelson"); fieldOf(err) != "preset" {
		t.Errorf("unknown preset: %v", err)
	}
}

func asObjectErr(r Remote) string {
	b, _ := json.Marshal(r)
	return string(b)
}
