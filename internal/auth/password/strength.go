package password

import (
	_ "embed"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Length limits in characters (runes). The upper bound only keeps hashing
// cheap; it is far above any password a person types.
const (
	MinLength = 12
	MaxLength = 256
)

// Reasons CheckStrength refuses a password. Each says what to change, so a
// form can show it as is.
var (
	ErrTooShort = errors.New("password is too short: use at least 12 characters")
	ErrTooLong  = errors.New("password is too long: use at most 256 characters")
	ErrNotText  = errors.New("password is not valid text: type it again using ordinary characters")
	ErrCommon   = errors.New("password is one of the most commonly used: choose words others are unlikely to pick")
	ErrPattern  = errors.New("password is a predictable pattern (repeated characters, a sequence or a keyboard row): choose something less regular")
	ErrContext  = errors.New("password contains your user name or another account detail: leave it out")
)

//go:embed common.txt
var commonText string

var common = func() map[string]bool {
	set := make(map[string]bool)
	for line := range strings.Lines(commonText) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			set[line] = true
		}
	}
	return set
}()

// keyboardRuns are rows and columns people walk along; a password that is
// one stretch of any of them, forwards or backwards, is refused.
var keyboardRuns = []string{
	"1234567890-=",
	"!@#$%^&*()_+",
	"qwertyuiop[]\\",
	"asdfghjkl;'",
	"zxcvbnm,./",
	"qwertyuiopasdfghjklzxcvbnm",
	"qwertzuiopasdfghjklyxcvbnm",
	"azertyuiopqsdfghjklmwxcvbn",
	"1234567890qwertyuiopasdfghjklzxcvbnm",
	"1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/",
	"qazwsxedcrfvtgbyhnujmikolp",
	"abcdefghijklmnopqrstuvwxyz",
}

// CheckStrength applies the rules for a new password: MinLength to MaxLength
// characters, not a common password or a predictable pattern, and not
// containing the user name or any other context word (e-mail address,
// display name, product name). It deliberately has no composition rules
// (required digits, capitals or symbols): they push people towards the very
// patterns checked here without making passwords harder to guess.
func CheckStrength(pw string, context ...string) error {
	if !utf8.ValidString(pw) {
		return ErrNotText
	}
	switch n := utf8.RuneCountInString(pw); {
	case n < MinLength:
		return ErrTooShort
	case n > MaxLength:
		return ErrTooLong
	}
	lower := strings.ToLower(pw)
	if isCommon(lower) {
		return ErrCommon
	}
	if isPattern(lower) {
		return ErrPattern
	}
	if containsContext(lower, context) {
		return ErrContext
	}
	return nil
}

// isCommon reports whether s, or s without leading and trailing digits and
// symbols, is in the list, also after undoing look-alike substitutions.
func isCommon(s string) bool {
	core := strings.TrimFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	for _, c := range []string{s, unleet(s), core, unleet(core)} {
		if c != "" && common[c] {
			return true
		}
	}
	return false
}

var leet = strings.NewReplacer("0", "o", "1", "i", "3", "e", "4", "a", "5", "s", "7", "t", "@", "a", "$", "s", "!", "i")

func unleet(s string) string { return leet.Replace(s) }

// isPattern reports repetitions of a short or common unit, runs of
// consecutive characters and keyboard walks.
func isPattern(s string) bool {
	rs := []rune(s)
	if unit := repeatedUnit(rs); unit != nil {
		u := string(unit)
		if len(unit) <= 4 || isCommon(u) || isSequence(unit) || isKeyboardRun(u) {
			return true
		}
	}
	return isSequence(rs) || isKeyboardRun(s)
}

// repeatedUnit returns the shortest unit that s repeats at least twice
// (a trailing partial copy allowed), or nil.
func repeatedUnit(s []rune) []rune {
	n := len(s)
	if n < 2 {
		return nil
	}
	// Prefix function: the longest proper prefix that is also a suffix.
	pi := make([]int, n)
	for i := 1; i < n; i++ {
		k := pi[i-1]
		for k > 0 && s[i] != s[k] {
			k = pi[k-1]
		}
		if s[i] == s[k] {
			k++
		}
		pi[i] = k
	}
	period := n - pi[n-1]
	if period*2 > n {
		return nil
	}
	return s[:period]
}

// isSequence reports whether every character is one above (or every one
// below) the previous, with digits wrapping from 9 to 0.
func isSequence(s []rune) bool {
	if len(s) < 3 {
		return false
	}
	for _, step := range []rune{1, -1} {
		ok := true
		for i := 1; i < len(s) && ok; i++ {
			ok = next(s[i-1], step) == s[i]
		}
		if ok {
			return true
		}
	}
	return false
}

func next(r, step rune) rune {
	if r >= '0' && r <= '9' {
		return '0' + (r-'0'+step+10)%10
	}
	return r + step
}

func isKeyboardRun(s string) bool {
	for _, run := range keyboardRuns {
		if strings.Contains(run+run, s) || strings.Contains(reverse(run+run), s) {
			return true
		}
	}
	return false
}

func reverse(s string) string {
	rs := []rune(s)
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	return string(rs)
}

// containsContext reports whether s contains a context value or one of its
// words of four or more characters (so "alice.smith@example.com" also rules
// out "alice" and "smith"), directly or behind look-alike substitutions.
func containsContext(s string, context []string) bool {
	plain := unleet(s)
	for _, c := range context {
		c = strings.ToLower(strings.TrimSpace(c))
		words := strings.FieldsFunc(c, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if utf8.RuneCountInString(c) >= 3 {
			words = append(words, c)
		}
		for _, w := range words {
			if utf8.RuneCountInString(w) < 4 && w != c {
				continue
			}
			if strings.Contains(s, w) || strings.Contains(plain, w) {
				return true
			}
		}
	}
	return false
}
