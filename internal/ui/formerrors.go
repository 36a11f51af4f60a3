package ui

import (
	"maps"
	"slices"
	"strings"

	"wharf/internal/persistence"
)

// fieldMessages collects the field errors of a records refusal, by field. It reports false
// when err holds anything other than field errors, which the caller answers as a failure.
func fieldMessages(err error) (map[string]string, bool) {
	fes, ok := persistence.AllFieldErrors(err)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(fes))
	for _, fe := range fes {
		if _, dup := out[fe.Field]; !dup {
			out[fe.Field] = fe.Message
		}
	}
	return out, true
}

// errorItem is one line of a refused form's summary: the field's label and why it was
// refused, linking to the field's input when the form has one.
type errorItem struct {
	Href    string // "#<input id>", empty for an error of the form as a whole
	Label   string
	Message string
}

// errorSummary lists errs (by field name) for the "error-summary" template. The input of
// field f has the id prefix+f with dots as dashes, as every form of the UI names them; keys
// outside fields ("", "body", "config") refuse the form as a whole.
func errorSummary(errs map[string]string, prefix string) []errorItem {
	return formSummary(errs, func(field string) (string, string) {
		switch field {
		case "", "body", "config":
			return "", ""
		}
		return prefix + strings.ReplaceAll(field, ".", "-"), ""
	})
}

// formSummary lists errs in the order of their field names; idOf gives the id of a field's
// input and its label: an empty id when the form has none for it (the summary is then the
// only place the error shows), an empty label for the field's name in words.
func formSummary(errs map[string]string, idOf func(field string) (id, label string)) []errorItem {
	out := make([]errorItem, 0, len(errs))
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		it := errorItem{Label: fieldLabel(k), Message: errs[k]}
		id, label := idOf(k)
		if id != "" {
			it.Href = "#" + id
		}
		if label != "" {
			it.Label = label
		}
		out = append(out, it)
	}
	return out
}

// labelWords are the words a field name spells differently from how people write them.
var labelWords = map[string]string{
	"as2": "AS2", "id": "ID", "ids": "IDs", "url": "URL", "urls": "URLs", "mdn": "MDN",
	"mic": "MIC", "tls": "TLS", "http": "HTTP", "mib": "MiB", "totp": "TOTP", "oidc": "OIDC",
	"gcm": "GCM", "api": "API", "smtp": "SMTP", "hmac": "HMAC", "cms": "CMS",
}

// fieldLabel turns a field name such as "tls.ca_file" into words ("TLS: CA file"), for a
// field that has no label of its own.
func fieldLabel(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		words := strings.Fields(strings.ReplaceAll(p, "_", " "))
		for j, w := range words {
			if up, ok := labelWords[w]; ok {
				words[j] = up
			}
		}
		p = strings.Join(words, " ")
		if i == 0 && p != "" {
			p = strings.ToUpper(p[:1]) + p[1:]
		}
		parts[i] = p
	}
	return strings.Join(parts, ": ")
}
