package retry

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDecodeNamesTheField: every refusal of a policy names the field, however deep.
func TestDecodeNamesTheField(t *testing.T) {
	tests := []struct {
		in, field string
	}{
		{`[]`, ""},
		{`{"strategy":"sometimes"}`, "strategy"},
		{`{"base":"soon"}`, "base"},
		{`{"max_retries":"8"}`, "max_retries"},
		{`{"colour":"red"}`, "colour"},
		{`{"rules":[]}`, "rules"},
		{`{"rules":{"http_6xx":{"never":true}}}`, "rules.http_6xx"},
		{`{"rules":{"http_5xx":{"base":"10 seconds"}}}`, "rules.http_5xx.base"},
		{`{"rules":{"http_5xx":{"retries":3}}}`, "rules.http_5xx.retries"},
		{`{"rules":{"timeout":{"never":"yes"}}}`, "rules.timeout.never"},
		{`{"rules":{"http_4xx":{"never":true,"base":"1s"}}}`, "rules.http_4xx.never"},
		{`{"rules":{"http_5xx":{"base":"1h","max_delay":"1m"}}}`, "rules.http_5xx.base"},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || fe.Message == "" {
			t.Errorf("Decode(%s) = %v, want an error naming %q", tt.in, err, tt.field)
		}
	}
	p, err := Decode([]byte(`{"strategy":"fixed","base":"1m","rules":{"http_4xx":{"never":true},"http_5xx":{"strategy":"exponential","base":"10s","max_delay":"10m","max_retries":8,"jitter":0.1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Rules.For(ClassHTTP5xx)
	if p.Strategy != Fixed || time.Duration(p.Base) != time.Minute || r == nil || r.Strategy != Exponential ||
		time.Duration(r.Base) != 10*time.Second || *r.MaxRetries != 8 || *r.Jitter != 0.1 || !p.Rules.For(ClassHTTP4xx).Never {
		t.Fatalf("Decode = %+v, http_5xx %+v", p, r)
	}
}

// TestUnmarshalKeepsDefaults: a policy decoded inside a config lands on the config's
// defaults: fields it names replace them, a rule it names replaces that class's rule,
// the rest stays, and nothing is validated until the config's Validate.
func TestUnmarshalKeepsDefaults(t *testing.T) {
	var cfg struct {
		Retry Policy `json:"retry"`
	}
	cfg.Retry = Policy{Strategy: Fixed, Base: Duration(time.Second), MaxRetries: intp(1000),
		Rules: Rules{HTTP4xx: &Rule{Strategy: Fixed}, Timeout: &Rule{MaxRetries: intp(2)}}}
	err := json.Unmarshal([]byte(`{"retry":{"base":"5s","jitter":2,"rules":{"http_4xx":{"never":true}}}}`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Retry
	if p.Strategy != Fixed || time.Duration(p.Base) != 5*time.Second || *p.MaxRetries != 1000 ||
		!p.Rules.For(ClassHTTP4xx).Never || p.Rules.For(ClassHTTP4xx).Strategy != "" || *p.Rules.For(ClassTimeout).MaxRetries != 2 {
		t.Fatalf("decoded onto defaults: %+v", p)
	}
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "jitter: ") {
		t.Fatalf("Validate = %v, want the jitter refused", err)
	}
}
