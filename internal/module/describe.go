package module

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// FieldKind is how a config field is entered.
type FieldKind string

const (
	KindText     FieldKind = "text"
	KindInteger  FieldKind = "integer"
	KindNumber   FieldKind = "number"
	KindBoolean  FieldKind = "boolean"
	KindDuration FieldKind = "duration" // a Go duration such as 30s or 5m
	KindMap      FieldKind = "map"      // string keys to string values
	KindList     FieldKind = "list"     // a list of strings, such as alert codes
	// KindIntegerList is a list of integers, such as HTTP statuses.
	KindIntegerList FieldKind = "integer_list"
	// KindCertificate is the id of a stored certificate.
	KindCertificate FieldKind = "certificate"
)

// FieldSpec describes one field of a plugin type's config, as a form offers it.
type FieldSpec struct {
	// Name is the field's JSON key; a field of a nested object is dotted ("retry.base").
	Name string
	Kind FieldKind
	// Required fields have no default: a config without them is refused.
	Required bool
	// WriteOnly fields are sealed at rest and never shown back.
	WriteOnly bool
	// Default is the value a new config starts with, as text ("" for none).
	Default string
}

// Field tags: `wharf:"required"` marks a field without which a config is refused and
// `wharf:"certificate"` an integer that is a stored certificate's id. Every other property
// of a FieldSpec comes from the field's Go type, its json tag and the config's defaults.
const fieldTag = "wharf"

var durationType = reflect.TypeFor[delivery.Duration]()

// Describe lists the fields of a plugin type's config in declaration order, those of
// embedded structs (the shared target options) after the type's own, and nested objects
// flattened with dotted names. It describes what Decode reads; Decode stays the
// one rule set that accepts or refuses a value.
func Describe(t persistence.PluginType) ([]FieldSpec, error) {
	p, ok := Lookup(t)
	if !ok {
		return nil, &persistence.FieldError{Field: "type", Message: fmt.Sprintf("no plugin type %q", t)}
	}
	cfg := p.NewConfig()
	var writeOnly []string
	if wo, ok := cfg.(WriteOnly); ok {
		writeOnly = wo.WriteOnlyFields()
	}
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("plugin type %s: config %T is not a struct", t, cfg)
	}
	out, err := describeStruct(v, "")
	if err != nil {
		return nil, fmt.Errorf("plugin type %s: %w", t, err)
	}
	for i := range out {
		if !strings.Contains(out[i].Name, ".") && slices.Contains(writeOnly, out[i].Name) {
			out[i].WriteOnly = true
		}
	}
	return out, nil
}

func describeStruct(v reflect.Value, prefix string) ([]FieldSpec, error) {
	var out, embedded []FieldSpec
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			inner, err := describeStruct(fv, prefix)
			if err != nil {
				return nil, err
			}
			embedded = append(embedded, inner...)
			continue
		}
		if name == "" {
			name = sf.Name
		}
		name = prefix + name
		tags := strings.Split(sf.Tag.Get(fieldTag), ",")
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
			if !fv.IsNil() {
				fv = fv.Elem()
			} else {
				fv = reflect.Value{}
			}
		}
		if ft.Kind() == reflect.Struct && ft != durationType {
			if !fv.IsValid() {
				fv = reflect.New(ft).Elem()
			}
			inner, err := describeStruct(fv, name+".")
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
			continue
		}
		spec := FieldSpec{Name: name, Required: slices.Contains(tags, "required")}
		switch {
		case ft == durationType:
			spec.Kind = KindDuration
		case ft.Kind() == reflect.String:
			spec.Kind = KindText
		case ft.Kind() == reflect.Bool:
			spec.Kind = KindBoolean
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			spec.Kind = KindInteger
			if slices.Contains(tags, "certificate") {
				spec.Kind = KindCertificate
			}
		case ft.Kind() == reflect.Float32 || ft.Kind() == reflect.Float64:
			spec.Kind = KindNumber
		case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.String:
			spec.Kind = KindMap
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			spec.Kind = KindList
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() >= reflect.Int && ft.Elem().Kind() <= reflect.Int64:
			spec.Kind = KindIntegerList
		default:
			return nil, fmt.Errorf("field %s: no form kind for %s", name, ft)
		}
		if fv.IsValid() {
			spec.Default = defaultText(spec.Kind, fv)
		}
		out = append(out, spec)
	}
	return append(out, embedded...), nil
}

// defaultText is a default value as a form shows it; zero values of fields that are not
// booleans show as empty.
func defaultText(k FieldKind, v reflect.Value) string {
	if v.IsZero() && k != KindBoolean {
		return ""
	}
	switch k {
	case KindDuration:
		return time.Duration(v.Int()).String()
	case KindText:
		return v.String()
	case KindBoolean:
		return strconv.FormatBool(v.Bool())
	case KindInteger, KindCertificate:
		if v.CanInt() {
			return strconv.FormatInt(v.Int(), 10)
		}
		return strconv.FormatUint(v.Uint(), 10)
	case KindNumber:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case KindMap:
		m := map[string]string{}
		for _, k := range v.MapKeys() {
			m[k.String()] = v.MapIndex(k).String()
		}
		return FormatMap(m)
	case KindList:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = v.Index(i).String()
		}
		return strings.Join(items, ", ")
	case KindIntegerList:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = strconv.FormatInt(v.Index(i).Int(), 10)
		}
		return strings.Join(items, ", ")
	}
	return ""
}

// FormatMap writes a string map one "key: value" line per entry, sorted by key, as a
// KindMap field is entered.
func FormatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + ": " + m[k] + "\n")
	}
	return b.String()
}
