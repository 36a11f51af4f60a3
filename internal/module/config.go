package module

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// Sealer seals and opens secret values at rest (internal/secret implements it).
type Sealer interface {
	Seal(plain []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// Instance is a plugin config as the API and the forms see it.
type Instance struct {
	Name    persistence.InstanceName
	Type    persistence.PluginType
	Enabled bool
	Config  Config
}

// Decode reads an API object for a plugin type — name, enabled and the type's own fields —
// strictly: unknown fields and invalid values are refused naming the field. For an update,
// stored is the current record; write-only fields the body leaves out keep their values.
// This is the one rule set behind REST and the UI.
func Decode(t persistence.PluginType, body []byte, stored *persistence.PluginConfig, s Sealer) (Instance, error) {
	p, ok := Lookup(t)
	if !ok {
		return Instance{}, &persistence.FieldError{Field: "type", Message: fmt.Sprintf("no plugin type %q", t)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return Instance{}, &persistence.FieldError{Field: "body", Message: "not a JSON object: " + err.Error()}
	}
	// Every field is checked before refusing, so one refusal names all that is wrong.
	var errs persistence.FieldErrors
	in := Instance{Type: t, Enabled: true}
	if raw, ok := fields["name"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			errs.Add("name", "Enter a name: 1 to 64 of a-z, 0-9, _ and -.")
		} else if n, err := persistence.ParseInstanceName(s); err != nil {
			errs.Add("name", err.Error())
		} else {
			in.Name = n
		}
		delete(fields, "name")
	} else if stored == nil {
		errs.Add("name", "required")
	}
	if stored != nil {
		if in.Name != "" && in.Name != stored.Name {
			errs.Add("name", "cannot be changed")
		}
		in.Name = stored.Name
	}
	if raw, ok := fields["type"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != string(t) {
			errs.Add("type", fmt.Sprintf("must be %q", t))
		}
		delete(fields, "type")
	}
	if raw, ok := fields["enabled"]; ok {
		if err := json.Unmarshal(raw, &in.Enabled); err != nil {
			errs.Add("enabled", "Choose yes or no.")
		}
		delete(fields, "enabled")
	}
	var storedFields map[string]json.RawMessage
	var kept []string
	if stored != nil {
		secrets, err := openSecrets(stored.Secrets, s)
		if err != nil {
			return Instance{}, err
		}
		if err := json.Unmarshal(stored.Config, &storedFields); err != nil || storedFields == nil {
			storedFields = map[string]json.RawMessage{}
		}
		for k, v := range secrets {
			storedFields[k] = v
			if _, given := fields[k]; !given {
				fields[k] = v
				kept = append(kept, k)
			}
		}
	}
	cfg, err := decodeStrict(p, fields)
	if !errs.Merge(err) {
		return Instance{}, err
	}
	if err := errs.Err(); err != nil {
		return Instance{}, err
	}
	if err := checkSecretBinding(p, cfg, storedFields, kept); err != nil {
		return Instance{}, err
	}
	in.Config = cfg
	return in, nil
}

// Encode turns an Instance into the stored record: the type's fields as JSON, with the
// write-only ones moved out and sealed.
func Encode(in Instance, s Sealer) (persistence.PluginConfig, error) {
	raw, err := json.Marshal(in.Config)
	if err != nil {
		return persistence.PluginConfig{}, fmt.Errorf("encode %s config: %w", in.Type, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return persistence.PluginConfig{}, fmt.Errorf("encode %s config: %w", in.Type, err)
	}
	secrets := map[string]json.RawMessage{}
	if wo, ok := in.Config.(WriteOnly); ok {
		for _, k := range wo.WriteOnlyFields() {
			if v, ok := fields[k]; ok {
				if !isEmptyJSON(v) {
					secrets[k] = v
				}
				delete(fields, k)
			}
		}
	}
	pub, err := json.Marshal(fields)
	if err != nil {
		return persistence.PluginConfig{}, fmt.Errorf("encode %s config: %w", in.Type, err)
	}
	rec := persistence.PluginConfig{Name: in.Name, Type: in.Type, Enabled: in.Enabled, Config: pub}
	if len(secrets) > 0 {
		plain, err := json.Marshal(secrets)
		if err != nil {
			return persistence.PluginConfig{}, fmt.Errorf("encode %s secrets: %w", in.Type, err)
		}
		if rec.Secrets, err = s.Seal(plain); err != nil {
			return persistence.PluginConfig{}, fmt.Errorf("seal %s secrets: %w", in.Type, err)
		}
	}
	return rec, nil
}

// Load opens a stored record into its full config, secrets included, for building the
// running instance.
func Load(rec persistence.PluginConfig, s Sealer) (Instance, error) {
	p, ok := Lookup(rec.Type)
	if !ok {
		return Instance{}, fmt.Errorf("instance %s: no plugin type %q is registered", rec.Name, rec.Type)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rec.Config, &fields); err != nil {
		return Instance{}, fmt.Errorf("instance %s: stored config: %w", rec.Name, err)
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	secrets, err := openSecrets(rec.Secrets, s)
	if err != nil {
		return Instance{}, fmt.Errorf("instance %s: %w", rec.Name, err)
	}
	for k, v := range secrets {
		fields[k] = v
	}
	cfg, err := decodeStrict(p, fields)
	if err != nil {
		return Instance{}, fmt.Errorf("instance %s: stored config: %w", rec.Name, err)
	}
	return Instance{Name: rec.Name, Type: rec.Type, Enabled: rec.Enabled, Config: cfg}, nil
}

// Present is the API object of a stored record: name, type, enabled and the type's
// fields, never the write-only ones.
func Present(rec persistence.PluginConfig) map[string]any {
	out := map[string]any{}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rec.Config, &fields); err == nil {
		for k, v := range fields {
			out[k] = v
		}
	}
	out["name"] = rec.Name
	out["type"] = rec.Type
	out["enabled"] = rec.Enabled
	return out
}

func openSecrets(sealed []byte, s Sealer) (map[string]json.RawMessage, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	plain, err := s.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("open sealed config values: %w", err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(plain, &out); err != nil {
		return nil, fmt.Errorf("open sealed config values: %w", err)
	}
	return out, nil
}

// jsonFieldError names the field a decoding error is about.
func jsonFieldError(err error, p Plugin, fields map[string]json.RawMessage) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &persistence.FieldError{Field: te.Field, Message: "This field does not take a " + te.Value + "."}
	}
	// A target's retry policy names its own refused field; every target holds it as retry.
	var re *retry.FieldError
	if errors.As(err, &re) {
		return &persistence.FieldError{Field: strings.TrimSuffix("retry."+re.Field, "."), Message: re.Message}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &persistence.FieldError{Field: strings.Trim(rest, `"`), Message: "unknown field"}
	}
	// Errors from a field's UnmarshalText/UnmarshalJSON carry no field name in the
	// standard library: decode the fields one at a time to find the one that fails.
	for k, v := range fields {
		one, _ := json.Marshal(map[string]json.RawMessage{k: v})
		if json.Unmarshal(one, p.NewConfig()) != nil {
			return &persistence.FieldError{Field: k, Message: msg}
		}
	}
	return &persistence.FieldError{Field: "config", Message: msg}
}

func isEmptyJSON(v json.RawMessage) bool {
	s := string(bytes.TrimSpace(v))
	return s == "null" || s == `""` || s == "{}" || s == "[]"
}
