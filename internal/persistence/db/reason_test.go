package db_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"wharf/internal/persistence"
)

// Every reason and last error the store writes goes through persistence.SanitizeReason.
func TestSanitizeReason(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes of two-byte runes
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "connection refused", "connection refused"},
		{"empty", "", ""},
		{"url with credentials", `Post "https://user:secret@as2.example.com:4080/as2?token=x": EOF`, `Post "[url]": EOF`},
		{"url ending a sentence", "could not reach http://partner.example/in.", "could not reach [url]."},
		{"url in parentheses", "failed (sftp://host/dir)", "failed ([url])"},
		{"several urls", "http://a/ then ftp://b/c", "[url] then [url]"},
		{"upper-case scheme", "HTTPS://EXAMPLE.COM/x refused", "[url] refused"},
		{"not a url", "ratio 3:1 at 10://", "ratio 3:1 at 10://"},
		{"new lines and tabs", "line one\n\tline two\r\n", "line one line two"},
		{"control characters", "bell\x07 and escape\x1b[31m", "bell and escape [31m"},
		{"invalid utf-8", "bad \xff byte", "bad \uFFFD byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := persistence.SanitizeReason(tc.in); got != tc.want {
				t.Fatalf("SanitizeReason(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("bounded on a rune boundary", func(t *testing.T) {
		got := persistence.SanitizeReason(long)
		if len(got) > persistence.MaxReasonBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Fatalf("SanitizeReason(800 bytes) = %d bytes, valid %v", len(got), utf8.ValidString(got))
		}
		if exact := strings.Repeat("a", persistence.MaxReasonBytes); persistence.SanitizeReason(exact) != exact {
			t.Fatal("a reason of exactly the limit was cut")
		}
	})
}
