package recovery

import (
	"regexp"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	plain, hashed, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != Count || len(hashed) != Count {
		t.Fatalf("got %d codes and %d hashes", len(plain), len(hashed))
	}
	format := regexp.MustCompile(`^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$`)
	seen := map[string]bool{}
	for i, c := range plain {
		if !format.MatchString(c) {
			t.Errorf("code %q has the wrong format", c)
		}
		if seen[c] {
			t.Errorf("code %q repeated", c)
		}
		seen[c] = true
		if strings.Contains(hashed[i], strings.ReplaceAll(c, "-", "")) {
			t.Errorf("hash %q contains its code", hashed[i])
		}
		if idx, ok := Match(c, hashed); !ok || idx != i {
			t.Errorf("Match(%q) = %d, %v; want %d, true", c, idx, ok, i)
		}
	}
	again, _, _ := Generate()
	if again[0] == plain[0] {
		t.Fatal("two generations start with the same code")
	}
}

func TestMatchNormalizes(t *testing.T) {
	code := "0a1bc-de2fg"
	hashed := []string{hash("zzzzzzzzzz"), hash("0a1bcde2fg")}
	tests := []struct {
		name  string
		input string
		ok    bool
	}{
		{"as shown", code, true},
		{"upper case", strings.ToUpper(code), true},
		{"no dash", "0a1bcde2fg", true},
		{"spaces", " 0a1bc de2fg ", true},
		{"dashes and spaces mixed", "0a-1b c-de2-fg", true},
		{"o for zero and l for one", "oalbc-de2fg", true},
		{"I for one", "0AIBC-DE2FG", true},
		{"one symbol wrong", "0a1bc-de2fh", false},
		{"too short", "0a1bc-de2f", false},
		{"too long", "0a1bc-de2fgg", false},
		{"u is not in the alphabet", "0a1bc-de2fu", false},
		{"non-ASCII", "0a1bc-de2fé", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, ok := Match(tt.input, hashed)
			if ok != tt.ok || (ok && idx != 1) || (!ok && idx != -1) {
				t.Fatalf("Match(%q) = %d, %v; want ok=%v", tt.input, idx, ok, tt.ok)
			}
		})
	}
}

// TestSpentCode shows the caller's side of one-time use: blanking the
// matched hash makes the code fail from then on.
func TestSpentCode(t *testing.T) {
	plain, hashed, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	idx, ok := Match(plain[3], hashed)
	if !ok {
		t.Fatal("fresh code refused")
	}
	hashed[idx] = ""
	if _, ok := Match(plain[3], hashed); ok {
		t.Fatal("spent code accepted")
	}
	if _, ok := Match(plain[4], hashed); !ok {
		t.Fatal("other code refused after one was spent")
	}
	if _, ok := Match(plain[0], nil); ok {
		t.Fatal("code accepted with no hashes stored")
	}
}
