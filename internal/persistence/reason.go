package persistence

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxReasonBytes bounds a stored reason or last error.
const MaxReasonBytes = 500

// urlRE matches anything shaped like scheme://…: endpoints carry hosts, paths, query
// tokens and sometimes user:password, none of which belongs in history an operator shares.
var urlRE = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]*://[^\s"'<>` + "`" + `]*`)

// SanitizeReason makes a failure text fit for history and last_error: URLs become [url],
// control characters and runs of white space become one space, and the result is at most
// MaxReasonBytes of valid UTF-8.
func SanitizeReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.Contains(s, "://") {
		s = urlRE.ReplaceAllStringFunc(s, func(u string) string {
			// Punctuation that ends a sentence or closes a bracket is not part of the URL.
			trimmed := strings.TrimRight(u, ".,;:!?)]}")
			return "[url]" + u[len(trimmed):]
		})
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= MaxReasonBytes {
		return s
	}
	const ellipsis = "…"
	cut := MaxReasonBytes - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + ellipsis
}
