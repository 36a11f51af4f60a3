package sender

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

func TestConfigDefaults(t *testing.T) {
	c := NewConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	opts := c.Options()
	if opts.MaxConcurrent != delivery.DefaultMaxConcurrent || c.ContentType != DefaultContentType || c.MaxMDNKiB != DefaultMaxMDNKiB {
		t.Errorf("defaults %+v", c)
	}
	// The instance's policy is only a backstop behind the partner profile's.
	if d, ok := opts.Retry.Delay(500, nil); !ok || d != time.Second {
		t.Errorf("backstop delay after 500 attempts: %v %v", d, ok)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"retry"`, `"content_type"`, `"max_mdn_kib"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("JSON %s lacks %s", raw, key)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		json  string
		field string // "" means valid
	}{
		{"defaults", `{}`, ""},
		{"own domain and limits", `{"message_id_domain":"as2.example.com","max_mdn_kib":64,"content_type":"application/edi-x12","max_concurrent":4}`, ""},
		{"retry override", `{"retry":{"strategy":"exponential","base":"10s","max_delay":"1h","max_retries":20}}`, ""},
		{"bad content type", `{"content_type":"not a type"}`, "content_type"},
		{"empty content type", `{"content_type":""}`, "content_type"},
		{"content types by extension", `{"content_types":{"xml":"application/xml","edi":"application/edifact","tar.gz":"application/x-tar"}}`, ""},
		{"extension with its dot", `{"content_types":{".xml":"application/xml"}}`, "content_types"},
		{"extension in upper case", `{"content_types":{"XML":"application/xml"}}`, "content_types"},
		{"extension with a slash", `{"content_types":{"a/b":"application/xml"}}`, "content_types"},
		{"empty extension", `{"content_types":{"":"application/xml"}}`, "content_types"},
		{"not a media type", `{"content_types":{"xml":"xml"}}`, "content_types"},
		{"media type with a line break", `{"content_types":{"xml":"application/xml\r\nX-Evil: 1"}}`, "content_types"},
		{"domain with a space", `{"message_id_domain":"as2 example"}`, "message_id_domain"},
		{"domain with an at", `{"message_id_domain":"a@b"}`, "message_id_domain"},
		{"MDN limit too small", `{"max_mdn_kib":1}`, "max_mdn_kib"},
		{"MDN limit too large", `{"max_mdn_kib":1048576}`, "max_mdn_kib"},
		{"too many in flight", `{"max_concurrent":1000}`, "max_concurrent"},
		{"bad retry", `{"retry":{"jitter":2}}`, "retry.jitter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConfig()
			dec := json.NewDecoder(bytes.NewReader([]byte(tt.json)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(c); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate: %v, want a field error on %s", err, tt.field)
			}
		})
	}
}
