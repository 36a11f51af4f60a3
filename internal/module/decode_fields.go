package module

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"wharf/internal/persistence"
)

// decodeStrict decodes a plugin type's fields strictly and validates them, refusing with
// every invalid field at once: each value that does not decode is named by its own
// (dotted) field with a message for people, and the fields that do decode are validated
// too, so one submit shows all that is wrong.
func decodeStrict(p Plugin, fields map[string]json.RawMessage) (Config, error) {
	cfg, err := decodeInto(p, fields)
	if err == nil {
		if err := validateConfig(cfg, nil); err != nil {
			return nil, err
		}
		return cfg, nil
	}
	specs, derr := Describe(p.Type)
	if derr != nil {
		return nil, jsonFieldError(err, p, fields)
	}
	var errs persistence.FieldErrors
	rest := cloneFields(fields)
	for k := range fields {
		if !knownKey(specs, k) {
			errs.Add(k, "unknown field: "+string(p.Type)+" has no such setting")
			delete(rest, k)
		}
	}
	for _, spec := range specs {
		raw, ok := valueAt(fields, spec.Name)
		if !ok {
			continue
		}
		one := map[string]json.RawMessage{}
		setValueAt(one, spec.Name, raw)
		if _, err := decodeInto(p, one); err != nil {
			errs.Add(spec.Name, decodeMessage(spec, err))
			deleteValueAt(rest, spec.Name)
		}
	}
	if len(errs) == 0 {
		// The fields decode one by one but not together: name what the decoder found.
		return nil, jsonFieldError(err, p, fields)
	}
	// The fields that decode are validated as well; a field left out takes its default,
	// and a refusal of a field already refused keeps the first reason.
	if cfg, err := decodeInto(p, rest); err == nil {
		if err := validateConfig(cfg, &errs); err != nil {
			return nil, err
		}
	}
	return nil, errs
}

func decodeInto(p Plugin, fields map[string]json.RawMessage) (Config, error) {
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	cfg := p.NewConfig()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// validateConfig runs the config's own checks. Field errors go into errs when it is
// given (and the result is nil unless something else failed), else are returned.
func validateConfig(cfg Config, errs *persistence.FieldErrors) error {
	err := cfg.Validate()
	if err == nil {
		return nil
	}
	var own persistence.FieldErrors
	if !own.Merge(err) {
		return &persistence.FieldError{Field: "config", Message: err.Error()}
	}
	if errs == nil {
		return own
	}
	errs.Merge(own)
	return nil
}

// decodeMessage says, for people, what a field of kind k takes.
func decodeMessage(spec FieldSpec, err error) string {
	var te *json.UnmarshalTypeError
	typeErr := errors.As(err, &te)
	switch spec.Kind {
	case KindInteger:
		if spec.Default != "" {
			return "Enter a whole number, e.g. " + spec.Default + "."
		}
		return "Enter a whole number, e.g. 30."
	case KindNumber:
		return "Enter a number, e.g. 1.5."
	case KindDuration:
		if strings.Contains(err.Error(), "negative") {
			return "Enter a duration that is not negative, such as 30s or 5m."
		}
		return "Enter a duration such as 30s, 5m or 1h."
	case KindBoolean:
		return "Choose yes or no."
	case KindCertificate:
		return "Choose one of the stored certificates."
	case KindMap:
		return "Enter one Name: value per line."
	case KindList:
		return "Enter values separated by commas."
	case KindIntegerList:
		return "Enter whole numbers separated by commas, e.g. 202, 204."
	}
	if typeErr {
		return "Enter text."
	}
	// A typed text field (an enumeration, a name) explains itself.
	return strings.TrimPrefix(err.Error(), "json: ")
}

func knownKey(specs []FieldSpec, key string) bool {
	for _, s := range specs {
		if s.Name == key || strings.HasPrefix(s.Name, key+".") {
			return true
		}
	}
	return false
}

func cloneFields(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// valueAt finds the value of a dotted field name in a JSON object.
func valueAt(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	head, rest, nested := strings.Cut(name, ".")
	raw, ok := fields[head]
	if !ok || !nested {
		return raw, ok
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(raw, &inner) != nil {
		return nil, false
	}
	return valueAt(inner, rest)
}

func setValueAt(fields map[string]json.RawMessage, name string, v json.RawMessage) {
	head, rest, nested := strings.Cut(name, ".")
	if !nested {
		fields[head] = v
		return
	}
	inner := map[string]json.RawMessage{}
	_ = json.Unmarshal(fields[head], &inner)
	setValueAt(inner, rest, v)
	fields[head], _ = json.Marshal(inner)
}

func deleteValueAt(fields map[string]json.RawMessage, name string) {
	head, rest, nested := strings.Cut(name, ".")
	if !nested {
		delete(fields, head)
		return
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(fields[head], &inner) != nil {
		// Not an object: the whole value goes.
		delete(fields, head)
		return
	}
	deleteValueAt(inner, rest)
	fields[head], _ = json.Marshal(inner)
}
