package totp

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

func TestNewSecret(t *testing.T) {
	k, err := NewSecret("Wharf", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := otp.NewKeyFromURL(k.URL)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Type() != "totp" || parsed.Issuer() != "Wharf" || parsed.AccountName() != "alice@example.com" {
		t.Fatalf("URL %q: type %q issuer %q account %q", k.URL, parsed.Type(), parsed.Issuer(), parsed.AccountName())
	}
	if parsed.Secret() != k.Secret || len(k.Secret) != 32 {
		t.Fatalf("secret %q (URL has %q)", k.Secret, parsed.Secret())
	}
	q, _ := url.ParseQuery(strings.SplitN(k.URL, "?", 2)[1])
	if q.Get("algorithm") != "SHA1" || q.Get("digits") != "6" || q.Get("period") != "30" {
		t.Fatalf("URL parameters %v", q)
	}
	other, _ := NewSecret("Wharf", "alice@example.com")
	if other.Secret == k.Secret {
		t.Fatal("two secrets are equal")
	}
	if _, err := NewSecret("", "alice"); err == nil {
		t.Fatal("empty issuer accepted")
	}
}

// The RFC 6238 appendix B secret ("12345678901234567890") in base32.
const rfcSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

func code(t *testing.T, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(rfcSecret, at, totp.ValidateOpts{
		Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRFCVector(t *testing.T) {
	// RFC 6238 appendix B, T = 59 s, SHA-1: 94287082, of which 6 digits are kept.
	now := time.Unix(59, 0)
	step, ok := Validate(rfcSecret, "287082", now, 0)
	if !ok || step != 1 {
		t.Fatalf("Validate = %d, %v; want 1, true", step, ok)
	}
}

func TestValidate(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	cur := Step(now)
	tests := []struct {
		name     string
		codeAt   time.Time
		code     string // overrides codeAt when set
		lastStep int64
		wantOK   bool
		wantStep int64
	}{
		{name: "current step", codeAt: now, wantOK: true, wantStep: cur},
		{name: "previous step", codeAt: now.Add(-Period), wantOK: true, wantStep: cur - 1},
		{name: "next step", codeAt: now.Add(Period), wantOK: true, wantStep: cur + 1},
		{name: "two steps old", codeAt: now.Add(-2 * Period)},
		{name: "two steps ahead", codeAt: now.Add(2 * Period)},
		{name: "reused code", codeAt: now, lastStep: cur},
		{name: "older than last used", codeAt: now.Add(-Period), lastStep: cur},
		{name: "newer than last used", codeAt: now, lastStep: cur - 1, wantOK: true, wantStep: cur},
		{name: "too short", code: "12345"},
		{name: "too long", code: "1234567"},
		{name: "empty", code: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.code
			if tt.codeAt != (time.Time{}) {
				c = code(t, tt.codeAt)
			}
			step, ok := Validate(rfcSecret, c, now, tt.lastStep)
			if ok != tt.wantOK || step != tt.wantStep {
				t.Fatalf("Validate(%q) = %d, %v; want %d, %v", c, step, ok, tt.wantStep, tt.wantOK)
			}
		})
	}
}

func TestValidateOnce(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	c := code(t, now)
	step, ok := Validate(rfcSecret, c, now, 0)
	if !ok {
		t.Fatal("first use refused")
	}
	// Ten seconds later the same code is still in the window but spent.
	if _, ok := Validate(rfcSecret, c, now.Add(10*time.Second), step); ok {
		t.Fatal("second use accepted")
	}
}

func TestValidateFormatting(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	c := code(t, now)
	if _, ok := Validate(rfcSecret, c[:3]+" "+c[3:], now, 0); !ok {
		t.Fatal("code with a space refused")
	}
	if _, ok := Validate(strings.ToLower(rfcSecret), c, now, 0); !ok {
		t.Fatal("lower-case secret refused")
	}
	if _, ok := Validate("not base32!", c, now, 0); ok {
		t.Fatal("invalid secret accepted")
	}
}

// TestReused: a code spent at enrolment is told apart from a wrong one while the app still
// shows it, and the next code is not reused.
func TestReused(t *testing.T) {
	k, _ := NewSecret("Wharf", "alice")
	now := time.Date(2026, 3, 1, 9, 0, 10, 0, time.UTC)
	code, _ := totp.GenerateCode(k.Secret, now)
	step, ok := Validate(k.Secret, code, now, 0)
	if !ok {
		t.Fatal("fresh code refused")
	}
	later := now.Add(10 * time.Second)
	next, _ := totp.GenerateCode(k.Secret, now.Add(Period))
	for _, tc := range []struct {
		name     string
		code     string
		lastStep int64
		want     bool
	}{
		{"the spent code", code, step, true},
		{"the spent code before it was spent", code, 0, false},
		{"the next code", next, step, false},
		{"a wrong code", "000000", step, false},
	} {
		if got := Reused(k.Secret, tc.code, later, tc.lastStep); got != tc.want {
			t.Errorf("%s: Reused = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, ok := Validate(k.Secret, next, now.Add(Period), step); !ok {
		t.Error("the next code after the spent one is refused")
	}
}
