package password

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckStrength(t *testing.T) {
	tests := []struct {
		name    string
		pw      string
		context []string
		want    error
	}{
		{"passphrase", "correct horse battery staple", nil, nil},
		{"lower case only is fine", "plumtreeharbourlantern", nil, nil},
		{"twelve random digits", "839201740192", nil, nil},
		{"twelve runes of non-latin text", "パスワードは長いほうが安全です", nil, nil},
		{"eleven characters", "abcdexyzpqr", nil, ErrTooShort},
		{"eleven runes many bytes", "ééééééééééé", nil, ErrTooShort},
		{"empty", "", nil, ErrTooShort},
		{"256 characters", strings.Repeat("plum tree harbour lantern ", 10)[:256], nil, nil},
		{"257 characters", strings.Repeat("x", 257), nil, ErrTooLong},
		{"invalid utf-8", "abcdefghijk\xff", nil, ErrNotText},
		{"common with digits", "password1234", nil, ErrCommon},
		{"common with symbols and case", "Password2024!", nil, ErrCommon},
		{"common with substitutions", "P@ssw0rd2024", nil, ErrCommon},
		{"common stem with leading digits", "1234iloveyou", nil, ErrCommon},
		{"common stem then digits", "qwerty123456", nil, ErrCommon},
		{"one letter repeated", "aaaaaaaaaaaa", nil, ErrPattern},
		{"short unit repeated", "abcabcabcabc", nil, ErrPattern},
		{"pair repeated", "ababababababab", nil, ErrPattern},
		{"common unit repeated", "dragondragon", nil, ErrPattern},
		{"digit sequence wrapping", "123456789012", nil, ErrPattern},
		{"descending sequence", "987654321098", nil, ErrPattern},
		{"alphabet run", "abcdefghijklm", nil, ErrPattern},
		{"keyboard row", "zxcvbnm,./zx", nil, ErrPattern},
		{"keyboard rows backwards", "lkjhgfdsapoi", nil, ErrPattern},
		{"keyboard columns", "1qaz2wsx3edc", nil, ErrPattern},
		{"keyboard reversed", "mnbvcxzlkjhg", nil, ErrPattern},
		{"keyboard symbols", "!@#$%^&*()_+", nil, ErrPattern},
		{"contains user name", "harbour-alice-lantern", []string{"alice"}, ErrContext},
		{"equals user name", "alicewonderland", []string{"alicewonderland"}, ErrContext},
		{"user name case differs", "harbourALICElantern", []string{"Alice"}, ErrContext},
		{"part of e-mail", "harbour smith lantern", []string{"alice.smith@example.com"}, ErrContext},
		{"context with substitutions", "h4rbour-4l1ce-lantern", []string{"alice"}, ErrContext},
		{"short e-mail part ignored", "harbour com lantern", []string{"alice@example.com"}, nil},
		{"unrelated context", "correct horse battery staple", []string{"alice", "Wharf Ltd"}, nil},
		{"blank context ignored", "correct horse battery staple", []string{"", "  "}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckStrength(tt.pw, tt.context...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("CheckStrength(%q) = %v, want %v", tt.pw, err, tt.want)
			}
		})
	}
}

func TestCommonListLoaded(t *testing.T) {
	if len(common) < 200 {
		t.Fatalf("common list has %d entries", len(common))
	}
	for word := range common {
		if word != strings.ToLower(strings.TrimSpace(word)) {
			t.Errorf("entry %q is not trimmed lower case", word)
		}
	}
}

func TestErrorsSayWhatToChange(t *testing.T) {
	for _, err := range []error{ErrTooShort, ErrTooLong, ErrNotText, ErrCommon, ErrPattern, ErrContext} {
		if !strings.Contains(err.Error(), ":") {
			t.Errorf("%q gives no advice", err)
		}
	}
}
