package retry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FieldError names the field of a policy that was refused, dotted from the policy
// ("rules.http_5xx.base").
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// UnmarshalJSON reads a policy strictly onto what it holds (a config's defaults): fields
// given replace those, and a rule given replaces the rule of its class. A refusal names
// the policy's own field (*FieldError); null leaves the policy as it is. It does not
// validate: the config's Validate does.
func (p *Policy) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	v, err := decodeOnto(*p, b)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// policyFields is Policy without its methods, for decoding one field at a time.
type policyFields Policy

// Decode reads a policy from JSON strictly, naming the field of any unknown key or
// invalid value, and validates it; the error is a *FieldError (Field "" when the value
// is not an object).
func Decode(raw []byte) (Policy, error) {
	p, err := decodeOnto(Policy{}, raw)
	if err != nil {
		return Policy{}, err
	}
	if err := p.Validate(); err != nil {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		return Policy{}, &FieldError{Field: field, Message: msg}
	}
	return p, nil
}

func decodeOnto(p Policy, raw []byte) (Policy, error) {
	top, err := object(raw)
	if err != nil {
		return Policy{}, &FieldError{Message: err.Error()}
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "rules" {
			if err := decodeField(k, top[k], (*policyFields)(&p)); err != nil {
				return Policy{}, &FieldError{Field: k, Message: err.Error()}
			}
			continue
		}
		rules, err := object(top[k])
		if err != nil {
			return Policy{}, &FieldError{Field: "rules", Message: err.Error()}
		}
		for _, name := range slices.Sorted(maps.Keys(rules)) {
			c, err := ParseClass(name)
			if err != nil {
				return Policy{}, &FieldError{Field: "rules." + name, Message: "unknown error class"}
			}
			fields, err := object(rules[name])
			if err != nil {
				return Policy{}, &FieldError{Field: "rules." + name, Message: err.Error()}
			}
			var r Rule
			for _, f := range slices.Sorted(maps.Keys(fields)) {
				if err := decodeField(f, fields[f], &r); err != nil {
					return Policy{}, &FieldError{Field: "rules." + name + "." + f, Message: err.Error()}
				}
			}
			p.Rules.Set(c, &r)
		}
	}
	return p, nil
}

func object(raw []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("must be a JSON object")
	}
	return m, nil
}

// decodeField decodes one key of an object into dst, strictly.
func decodeField(key string, value json.RawMessage, dst any) error {
	one, err := json.Marshal(map[string]json.RawMessage{key: value})
	if err != nil {
		return fmt.Errorf("must be a JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(one))
	dec.DisallowUnknownFields()
	err = dec.Decode(dst)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return fmt.Errorf("must be a JSON %s", jsonKind(te.Type.String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errors.New("unknown field")
	}
	return err
}

func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "number"
	case goType == "bool":
		return "boolean"
	}
	return "string"
}
