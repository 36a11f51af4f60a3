package module

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// describedConfig has one field of every kind a form offers.
type describedConfig struct {
	delivery.TargetOptions
	URL     string            `json:"url" wharf:"required"`
	Headers map[string]string `json:"headers,omitempty"`
	Secret  map[string]string `json:"secret_headers,omitempty"`
	Wait    delivery.Duration `json:"wait"`
	Port    int               `json:"port"`
	CertID  *int64            `json:"cert_id,omitempty" wharf:"certificate"`
	Verbose bool              `json:"verbose"`
	Codes   []string          `json:"codes,omitempty"`
	Status  []int             `json:"statuses,omitempty"`
	Ignored string            `json:"-"`
	hidden  string
}

func (c *describedConfig) Validate() error           { return nil }
func (c *describedConfig) WriteOnlyFields() []string { return []string{"secret_headers"} }

const describedType persistence.PluginType = "described-test"

func init() {
	retries := 4
	Register(Module{Name: "described", Plugins: []Plugin{{
		Type: describedType, Role: RoleTarget,
		NewConfig: func() Config {
			return &describedConfig{Port: 8080, Codes: []string{"a", "b"}, Status: []int{202, 204}, Wait: delivery.Duration(30 * time.Second), Verbose: true,
				Headers:       map[string]string{"B": "2", "A": "1"},
				TargetOptions: delivery.TargetOptions{Retry: delivery.RetryPolicy{MaxRetries: &retries}}}
		},
		NewTarget: func(Env, persistence.InstanceName, Config) (delivery.Deliverer, error) { return nopTarget{}, nil },
	}}})
}

func TestDescribeListsEveryField(t *testing.T) {
	got, err := Describe(describedType)
	if err != nil {
		t.Fatal(err)
	}
	want := []FieldSpec{
		{Name: "url", Kind: KindText, Required: true},
		{Name: "headers", Kind: KindMap, Default: "A: 1\nB: 2\n"},
		{Name: "secret_headers", Kind: KindMap, WriteOnly: true},
		{Name: "wait", Kind: KindDuration, Default: "30s"},
		{Name: "port", Kind: KindInteger, Default: "8080"},
		{Name: "cert_id", Kind: KindCertificate},
		{Name: "verbose", Kind: KindBoolean, Default: "true"},
		{Name: "codes", Kind: KindList, Default: "a, b"},
		{Name: "statuses", Kind: KindIntegerList, Default: "202, 204"},
		{Name: "max_concurrent", Kind: KindInteger},
		{Name: "retry.strategy", Kind: KindText},
		{Name: "retry.base", Kind: KindDuration},
		{Name: "retry.max_delay", Kind: KindDuration},
		{Name: "retry.max_retries", Kind: KindInteger, Default: "4"},
		{Name: "retry.jitter", Kind: KindNumber},
	}
	// The rules by class follow, one row of the same fields per class.
	for _, c := range retry.AllClasses {
		p := "retry.rules." + string(c) + "."
		want = append(want, FieldSpec{Name: p + "never", Kind: KindBoolean, Default: "false"},
			FieldSpec{Name: p + "strategy", Kind: KindText}, FieldSpec{Name: p + "base", Kind: KindDuration},
			FieldSpec{Name: p + "max_delay", Kind: KindDuration}, FieldSpec{Name: p + "max_retries", Kind: KindInteger},
			FieldSpec{Name: p + "jitter", Kind: KindNumber})
	}
	want = append(want, FieldSpec{Name: "await_completion", Kind: KindDuration})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Describe =\n%+v\nwant\n%+v", got, want)
	}
}

func TestDescribeUnknownType(t *testing.T) {
	if _, err := Describe("no-such-type"); err == nil {
		t.Fatal("Describe of an unknown type succeeded")
	}
}

// TestDecodeNamesRetryFields: a target config's retry policy is decoded strictly, and a
// refused value or key is named by its full path.
func TestDecodeNamesRetryFields(t *testing.T) {
	for _, tt := range []struct{ retry, field string }{
		{`{"rules":{"http_5xx":{"max_retries":"x"}}}`, "retry.rules.http_5xx.max_retries"},
		{`{"rules":{"http_5xx":{"base":"soon"}}}`, "retry.rules.http_5xx.base"},
		{`{"rules":{"http_6xx":{}}}`, "retry.rules.http_6xx"},
		{`{"rules":{"timeout":[]}}`, "retry.rules.timeout"},
		{`{"strategy":"sometimes"}`, "retry.strategy"},
	} {
		_, err := Decode(describedType, []byte(`{"name":"d","url":"x","retry":`+tt.retry+`}`), nil, nil)
		var fe *persistence.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("retry %s: %v, want an error naming %s", tt.retry, err, tt.field)
		}
	}
}
