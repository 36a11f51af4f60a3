package profile

import (
	"encoding/json"
	"strings"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

func TestParseAS2ID(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"WHARF", true},
		{"a", true},
		{"Acme Corp EDI", true},
		{"acme!#$%&'()*+,-./:;<=>?@[]^_`{|}~", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{" ACME", false},
		{"ACME ", false},
		{`AC"ME`, false},
		{`AC\ME`, false},
		{"AC\tME", false},
		{"AC\nME", false},
		{"AC\x7fME", false},
		{"ACMÉ", false},
	}
	for _, tt := range tests {
		got, err := ParseAS2ID(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseAS2ID(%q) = %q, %v; want ok %v", tt.in, got, err, tt.ok)
		}
		if err == nil && string(got) != tt.in {
			t.Errorf("ParseAS2ID(%q) = %q", tt.in, got)
		}
	}
}

func TestParseEnums(t *testing.T) {
	type parser func(string) error
	wrap := func(f func(string) (string, error)) parser {
		return func(s string) error { _, err := f(s); return err }
	}
	tests := []struct {
		name string
		fn   parser
		good []string
		bad  []string
	}{
		{"signing", wrap(func(s string) (string, error) { v, err := ParseSigningAlgorithm(s); return string(v), err }),
			[]string{"none", "sha256", "sha384", "sha512"}, []string{"", "sha1", "md5", "SHA256", "sha-256"}},
		{"encryption", wrap(func(s string) (string, error) { v, err := ParseEncryptionAlgorithm(s); return string(v), err }),
			[]string{"none", "aes128-cbc", "aes192-cbc", "aes256-cbc", "aes128-gcm", "aes256-gcm", "3des"},
			[]string{"", "des", "aes256", "AES256-CBC", "rc2"}},
		{"key transport", wrap(func(s string) (string, error) { v, err := ParseKeyTransport(s); return string(v), err }),
			[]string{"rsa-pkcs1v15", "rsa-oaep"}, []string{"", "rsa", "ecdh"}},
		{"mdn mode", wrap(func(s string) (string, error) { v, err := ParseMDNMode(s); return string(v), err }),
			[]string{"none", "sync", "async"}, []string{"", "Sync", "asynchronous"}},
		{"mic", wrap(func(s string) (string, error) { v, err := ParseMICAlgorithm(s); return string(v), err }),
			[]string{"sha256", "sha384", "sha512"}, []string{"", "none", "sha1", "md5"}},
		{"mic preference", wrap(func(s string) (string, error) { v, err := ParseMICPreference(s); return string(v), err }),
			[]string{"auto", "requested", "signature"}, []string{"", "either"}},
		{"duplicate filename", wrap(func(s string) (string, error) { v, err := ParseDuplicateFilename(s); return string(v), err }),
			[]string{"accept", "warn", "refuse"}, []string{"", "reject", "ACCEPT"}},
	}
	for _, tt := range tests {
		for _, s := range tt.good {
			if err := tt.fn(s); err != nil {
				t.Errorf("%s %q: %v", tt.name, s, err)
			}
		}
		for _, s := range tt.bad {
			if err := tt.fn(s); err == nil {
				t.Errorf("%s %q accepted", tt.name, s)
			}
		}
	}
}

// TestJSONRefusesBadValues holds that decoding goes through the parsers.
func TestJSONRefusesBadValues(t *testing.T) {
	tests := []struct {
		body string
		want string
	}{
		{`{"signing_algorithm":"sha1"}`, "SHA-1"},
		{`{"encryption_algorithm":"rc2"}`, "encryption algorithm"},
		{`{"key_transport":"rsa"}`, "key transport"},
		{`{"mdn_mode":"maybe"}`, "MDN mode"},
		{`{"mdn_mic_algorithm":"md5"}`, "MIC algorithm"},
		{`{"mic_preference":"x"}`, "MIC preference"},
		{`{"duplicate_filename":"x"}`, "duplicate filename"},
		{`{"as2_id":"a\"b"}`, "AS2 id"},
	}
	for _, tt := range tests {
		r := NewRemote()
		err := json.Unmarshal([]byte(tt.body), &r)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error about %s", tt.body, err, tt.want)
		}
	}
}

func TestCMSMappings(t *testing.T) {
	for _, a := range AllEncryptionAlgorithms {
		c := a.Cipher()
		if (a == EncryptNone) != (c == "") {
			t.Errorf("%s.Cipher() = %q", a, c)
		}
		if c != "" {
			if _, err := cms.ParseContentCipher(string(c)); err != nil {
				t.Errorf("%s.Cipher() = %q: %v", a, c, err)
			}
			// Every algorithm Validate admits outbound must be one cms encrypts with.
			r := validRemote()
			r.EncryptionAlgorithm = a
			if fieldOf(r.Validate()) != "encryption_algorithm" && !c.Outbound() {
				t.Errorf("%s is admitted for sending but cms does not encrypt with %s", a, c)
			}
		}
	}
	for _, a := range AllSigningAlgorithms {
		if d := a.Digest(); (a == SignNone) != (d == "") || (d != "" && d.Weak()) {
			t.Errorf("%s.Digest() = %q", a, d)
		}
	}
	for _, a := range AllMICAlgorithms {
		if d := a.Digest(); d == "" || d.Weak() || string(d) != string(a) {
			t.Errorf("%s.Digest() = %q", a, d)
		}
	}
	for _, k := range AllKeyTransports {
		if _, err := cms.ParseKeyTransport(string(k.CMS())); err != nil {
			t.Errorf("%s.CMS() = %q: %v", k, k.CMS(), err)
		}
	}
}
