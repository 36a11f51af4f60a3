package config

import (
	"strings"
	"testing"
)

// TestNATSAuthRules: the bus credentials come one way at a time, pairs whole, and only
// with an external bus; a URL with credentials names the variables to use instead.
// Messages never repeat a value.
func TestNATSAuthRules(t *testing.T) {
	const url = "WHARF_NATS_URL=nats://n1:4222"
	cases := []struct {
		name    string
		env     []string
		wantErr []string // empty: valid
	}{
		{name: "user and password", env: []string{url, "WHARF_NATS_USER=wharf", "WHARF_NATS_PASSWORD=pw-secret"}},
		{name: "token and TLS", env: []string{url, "WHARF_NATS_TOKEN=tok-secret", "WHARF_NATS_TLS_CA=/ca.pem",
			"WHARF_NATS_TLS_CERT=/c.pem", "WHARF_NATS_TLS_KEY=/k.pem"}},
		{name: "two ways", env: []string{url, "WHARF_NATS_TOKEN=tok-secret", "WHARF_NATS_CREDS=/x.creds"},
			wantErr: []string{"set only one"}},
		{name: "password alone", env: []string{url, "WHARF_NATS_PASSWORD=pw-secret"},
			wantErr: []string{"WHARF_NATS_USER and WHARF_NATS_PASSWORD"}},
		{name: "key without certificate", env: []string{url, "WHARF_NATS_TLS_KEY=/k.pem"},
			wantErr: []string{"WHARF_NATS_TLS_CERT and WHARF_NATS_TLS_KEY"}},
		{name: "credentials without an external bus", env: []string{"WHARF_NATS_TOKEN=tok-secret"},
			wantErr: []string{"external bus only", "--nats"}},
		{name: "credentials in the URL", env: []string{"WHARF_NATS_URL=nats://wharf:pw-secret@n1:4222"},
			wantErr: []string{"WHARF_NATS_URL", "WHARF_NATS_USER", "WHARF_NATS_TOKEN", "WHARF_NATS_CREDS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(tc.env)
			if err == nil {
				err = c.Validate()
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q repeats a credential", err)
			}
		})
	}
}
