package module

import (
	"strings"
	"testing"

	"wharf/internal/persistence"
)

// TestSecretsStayBoundToTheirDestination changes a stored config's URL with and without
// its write-only field: a new origin needs the secret entered again (or cleared), a new
// path on the same origin does not.
func TestSecretsStayBoundToTheirDestination(t *testing.T) {
	created, err := Decode(testType, []byte(`{"name": "hook", "url": "https://in.example:8443/a",
		"secret_headers": {"Authorization": "Bearer canary-456"}}`), nil, reverseSealer{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Encode(created, reverseSealer{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		body   string
		refuse bool
		secret string // the secret the accepted config holds
	}{
		{"same URL", `{"url": "https://in.example:8443/a"}`, false, "Bearer canary-456"},
		{"new path and query", `{"url": "https://in.example:8443/b?x=1"}`, false, "Bearer canary-456"},
		{"host in other case", `{"url": "https://IN.example:8443/a"}`, false, "Bearer canary-456"},
		{"other host", `{"url": "https://evil.example:8443/a"}`, true, ""},
		{"other port", `{"url": "https://in.example:9443/a"}`, true, ""},
		{"default port", `{"url": "https://in.example/a"}`, true, ""},
		{"other scheme", `{"url": "http://in.example:8443/a"}`, true, ""},
		{"user info hiding another host", `{"url": "https://in.example:8443@evil.example/a"}`, true, ""},
		{"other host, secret entered again", `{"url": "https://evil.example/a", "secret_headers": {"Authorization": "Bearer new"}}`, false, "Bearer new"},
		{"other host, secret cleared", `{"url": "https://evil.example/a", "secret_headers": {}}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := Decode(testType, []byte(tt.body), &rec, reverseSealer{})
			if tt.refuse {
				fe, ok := err.(interface{ Unwrap() []error })
				if !ok || len(fe.Unwrap()) != 1 {
					t.Fatalf("Decode = %v; want one field error", err)
				}
				f, ok := fe.Unwrap()[0].(*persistence.FieldError)
				if !ok || f.Field != "secret_headers" || !strings.Contains(f.Message, "enter it again") {
					t.Fatalf("Decode = %#v; want a field error on secret_headers", fe.Unwrap()[0])
				}
				if strings.Contains(err.Error(), "canary") || strings.Contains(err.Error(), "evil.example") {
					t.Errorf("refusal repeats the secret or the URL: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode = %v; want it accepted", err)
			}
			if got := in.Config.(*testConfig).Secret["Authorization"]; got != tt.secret {
				t.Errorf("secret = %q, want %q", got, tt.secret)
			}
		})
	}
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"http://h/a", "http://h:80/b", true},
		{"https://h/a", "https://h:443", true},
		{"HTTPS://H/a", "https://h/", true},
		{"https://h/a", "http://h/a", false},
		{"https://h/a", "https://h:8443/a", false},
		{"https://h/a", "https://g/a", false},
		{"https://h/a", "::not a url", false},
	}
	for _, tt := range tests {
		if got := sameOrigin(tt.a, tt.b); got != tt.want {
			t.Errorf("sameOrigin(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
