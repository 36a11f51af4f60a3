package module

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// testConfig stands for a plugin's config: one plain field, one write-only field.
type testConfig struct {
	URL    string            `json:"url"`
	Wait   delivery.Duration `json:"wait"`
	Secret map[string]string `json:"secret_headers,omitempty"`
	Count  int               `json:"count"`
}

func (c *testConfig) Validate() error {
	if c.URL == "" {
		return &persistence.FieldError{Field: "url", Message: "required"}
	}
	return nil
}
func (c *testConfig) WriteOnlyFields() []string { return []string{"secret_headers"} }
func (c *testConfig) SecretDestination() string { return c.URL }

type nopTarget struct{}

func (nopTarget) Deliver(context.Context, delivery.Attempt) delivery.Result {
	return delivery.Delivered()
}

// reverseSealer is enough to tell sealed bytes from plain ones.
type reverseSealer struct{}

func (reverseSealer) Seal(p []byte) ([]byte, error) { return append([]byte("sealed:"), p...), nil }
func (reverseSealer) Open(p []byte) ([]byte, error) {
	s, ok := strings.CutPrefix(string(p), "sealed:")
	if !ok {
		return nil, errors.New("not sealed")
	}
	return []byte(s), nil
}

const testType = persistence.PluginNotificationWebhook

func init() {
	Register(Module{Name: "test", Plugins: []Plugin{{
		Type: testType, Role: RoleTarget,
		NewConfig: func() Config { return &testConfig{Count: 3} },
		NewTarget: func(Env, persistence.InstanceName, Config) (delivery.Deliverer, error) { return nopTarget{}, nil },
	}}})
}

func TestDecodeRefusesNamingTheField(t *testing.T) {
	tests := []struct {
		body  string
		field string
	}{
		{`{"name": "ok", "url": "x", "colour": "red"}`, "colour"},
		{`{"name": "Bad Name", "url": "x"}`, "name"},
		{`{"name": "ok", "url": ""}`, "url"},
		{`{"name": "ok", "url": "x", "count": "three"}`, "count"},
		{`{"name": "ok", "url": "x", "enabled": "yes"}`, "enabled"},
		{`{"name": "ok", "url": "x", "type": "file-writer"}`, "type"},
		{`{"url": "x"}`, "name"},
		{`[1]`, "body"},
		{`{"name": "ok", "url": "x", "wait": "soon"}`, "wait"},
	}
	for _, tt := range tests {
		_, err := Decode(testType, []byte(tt.body), nil, reverseSealer{})
		var fe *persistence.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("Decode(%s) = %v, want a field error on %q", tt.body, err, tt.field)
		}
	}
}

func TestWriteOnlyFieldsAreSealedAndKept(t *testing.T) {
	in, err := Decode(testType, []byte(`{"name": "hook", "url": "http://x", "secret_headers": {"X-Key": "canary-123"}}`), nil, reverseSealer{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Config.(*testConfig).Count != 3 {
		t.Error("defaults were not kept for fields the body left out")
	}
	rec, err := Encode(in, reverseSealer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.Config), "canary-123") {
		t.Fatalf("stored public config holds the secret: %s", rec.Config)
	}
	if !strings.HasPrefix(string(rec.Secrets), "sealed:") {
		t.Fatalf("secrets were not sealed: %q", rec.Secrets)
	}
	shown, _ := json.Marshal(Present(rec))
	if strings.Contains(string(shown), "canary") || strings.Contains(string(shown), "secret_headers") {
		t.Fatalf("Present shows a write-only field: %s", shown)
	}

	// An update that leaves the write-only field out keeps its value.
	upd, err := Decode(testType, []byte(`{"url": "http://x/y"}`), &rec, reverseSealer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := upd.Config.(*testConfig).Secret["X-Key"]; got != "canary-123" {
		t.Errorf("update lost the write-only value: %q", got)
	}
	if upd.Name != "hook" {
		t.Errorf("update lost the name: %q", upd.Name)
	}
	rec2, err := Encode(upd, reverseSealer{})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(rec2, reverseSealer{})
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Config.(*testConfig)
	if c.URL != "http://x/y" || c.Secret["X-Key"] != "canary-123" {
		t.Errorf("Load = %+v", c)
	}
	if _, err := Decode(testType, []byte(`{"name": "other", "url": "x"}`), &rec, reverseSealer{}); err == nil {
		t.Error("an update renamed the instance")
	}
}

func TestRegisterRefusesDuplicates(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering a type twice did not panic")
		}
	}()
	Register(Module{Name: "again", Plugins: []Plugin{{Type: testType, Role: RoleTarget, NewConfig: func() Config { return &testConfig{} },
		NewTarget: func(Env, persistence.InstanceName, Config) (delivery.Deliverer, error) { return nopTarget{}, nil }}}})
}

// TestDecodeNamesEveryInvalidField: one refusal names every field that is wrong, each
// under its own name and in words for people, whether the value does not decode or the
// config's own checks refuse it.
func TestDecodeNamesEveryInvalidField(t *testing.T) {
	body := `{"name": "Bad Name", "url": "", "count": "three", "wait": "soon", "colour": "red"}`
	_, err := Decode(testType, []byte(body), nil, reverseSealer{})
	got, ok := persistence.AllFieldErrors(err)
	if !ok {
		t.Fatalf("Decode = %v, want only field errors", err)
	}
	byField := map[string]string{}
	for _, fe := range got {
		byField[fe.Field] = fe.Message
	}
	want := map[string]string{
		"name":   "invalid instance name",
		"url":    "required",
		"count":  "Enter a whole number, e.g. 3.",
		"wait":   "Enter a duration such as 30s, 5m or 1h.",
		"colour": "unknown field",
	}
	for field, msg := range want {
		if !strings.Contains(byField[field], msg) {
			t.Errorf("error of %s = %q, want one containing %q (all: %v)", field, byField[field], msg, byField)
		}
	}
	if len(byField) != len(want) {
		t.Errorf("errors = %v, want exactly %d", byField, len(want))
	}
}
