package persistence

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzCheckReference checks a correlation or origin event id as every source does. An id
// it admits is valid UTF-8 of at most MaxReferenceLen bytes with only printable
// characters, so it reads back unchanged in REST, the UI, log lines and headers.
func FuzzCheckReference(f *testing.F) {
	for _, s := range []string{"PO-4711", "<1700000000.42@acme.example>", "", "a\x00b", "a\nb", "\u200b", "\xff",
		"Bestellung 4711 für Müller", string(make([]byte, MaxReferenceLen+1))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckReference(s) != nil {
			return
		}
		if len(s) > MaxReferenceLen || !utf8.ValidString(s) {
			t.Fatalf("%q admitted", s)
		}
		for _, r := range s {
			if unicode.IsControl(r) || !unicode.IsPrint(r) {
				t.Fatalf("%q admitted with %U", s, r)
			}
		}
	})
}
