package static

import (
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"wharf/internal/persistence"
)

// WCAG 2.x AA minimum contrast ratios.
const (
	minTextContrast = 4.5 // normal-size text
	minUIContrast   = 3.0 // user-interface components and focus indicators
)

// contrastPairs lists the foreground/background token pairs the stylesheet
// puts together, beyond those found by scanning its rules.
var contrastPairs = []struct {
	fg, bg string
	min    float64
}{
	{"--color-text", "--color-bg", minTextContrast},
	{"--color-text", "--color-surface", minTextContrast},
	{"--color-text", "--color-surface-alt", minTextContrast},
	{"--color-text-muted", "--color-bg", minTextContrast},
	{"--color-text-muted", "--color-surface", minTextContrast},
	{"--color-text-muted", "--color-surface-alt", minTextContrast},
	{"--color-accent", "--color-bg", minTextContrast}, // links
	{"--color-accent", "--color-surface", minTextContrast},
	{"--color-accent", "--color-surface-alt", minTextContrast},
	{"--color-accent-hover", "--color-surface", minTextContrast},
	{"--color-accent-text", "--color-accent", minTextContrast},
	{"--color-accent-text", "--color-accent-hover", minTextContrast},
	{"--color-danger-solid-text", "--color-danger-solid", minTextContrast},
	{"--color-danger-solid-text", "--color-danger-solid-hover", minTextContrast},
	{"--color-neutral-text", "--color-neutral-bg", minTextContrast},
	{"--color-info-text", "--color-info-bg", minTextContrast},
	{"--color-success-text", "--color-success-bg", minTextContrast},
	{"--color-warning-text", "--color-warning-bg", minTextContrast},
	{"--color-danger-text", "--color-danger-bg", minTextContrast},
	{"--color-focus-ring", "--color-bg", minUIContrast},
	{"--color-focus-ring", "--color-surface", minUIContrast},
	{"--color-focus-ring", "--color-surface-alt", minUIContrast},
	{"--color-input-border", "--color-bg", minUIContrast},
	{"--color-input-border", "--color-surface", minUIContrast},
	{"--color-danger-text", "--color-surface", minUIContrast}, // invalid input border
}

func TestContrast(t *testing.T) {
	sheet := parseStylesheet(t)
	themes := sheet.themes(t)

	for _, th := range themes {
		for _, p := range contrastPairs {
			checkContrast(t, th, p.fg, p.bg, p.min, "table")
		}
	}

	// Every rule that sets both a text and a background colour from tokens
	// is a pair the page shows: badges, flashes, buttons, active links.
	scanned := 0
	for _, r := range sheet.rules {
		fg, okFG := tokenOf(r.decls["color"])
		bg, okBG := tokenOf(r.decls["background-color"])
		if !okFG || !okBG {
			continue
		}
		scanned++
		for _, th := range themes {
			checkContrast(t, th, fg, bg, minTextContrast, strings.Join(r.selectors, ", "))
		}
	}
	if scanned < 10 {
		t.Errorf("found only %d rules pairing color and background-color; is the parser broken?", scanned)
	}
}

// TestStatusBadges holds every message status to a badge class whose text
// and background contrast in both themes.
func TestStatusBadges(t *testing.T) {
	sheet := parseStylesheet(t)
	themes := sheet.themes(t)
	for _, status := range persistence.AllMessageStatuses {
		class := ".badge-" + string(status)
		var fg, bg string
		for _, r := range sheet.rules {
			if r.media != "" || !r.has(class) {
				continue
			}
			if v, ok := tokenOf(r.decls["color"]); ok {
				fg = v
			}
			if v, ok := tokenOf(r.decls["background-color"]); ok {
				bg = v
			}
		}
		if fg == "" || bg == "" {
			t.Errorf("%s: no rule sets both color and background-color from tokens", class)
			continue
		}
		for _, th := range themes {
			checkContrast(t, th, fg, bg, minTextContrast, class)
		}
	}
}

// TestThemesAgree checks that both themes define the same colour tokens and
// that the explicit dark theme repeats the system-preference one exactly.
func TestThemesAgree(t *testing.T) {
	sheet := parseStylesheet(t)
	themes := sheet.themes(t)
	light, dark := themes[0], themes[1]
	for name := range light.colors {
		if _, ok := dark.colors[name]; !ok {
			t.Errorf("%s is defined for the light theme only", name)
		}
	}
	for name := range dark.colors {
		if _, ok := light.colors[name]; !ok {
			t.Errorf("%s is defined for the dark theme only", name)
		}
	}

	explicit := sheet.find(t, "", `:root[data-theme="dark"]`)
	media := sheet.find(t, "@media (prefers-color-scheme: dark)", `:root:not([data-theme="light"])`)
	if fmt.Sprint(explicit.decls) != fmt.Sprint(media.decls) {
		t.Errorf("the [data-theme=\"dark\"] block differs from the prefers-color-scheme block:\n%v\n%v", explicit.decls, media.decls)
	}
	if got := explicit.decls["color-scheme"]; got != "dark" {
		t.Errorf("dark theme color-scheme %q, want dark", got)
	}
	if got := sheet.find(t, "", `:root[data-theme="light"]`).decls["color-scheme"]; got != "light" {
		t.Errorf("light theme color-scheme %q, want light", got)
	}
}

func TestRelativeLuminanceAndContrast(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want float64
	}{
		{"#000000", "#ffffff", 21},
		{"#ffffff", "#ffffff", 1},
		{"#777777", "#ffffff", 4.48},
		{"#767676", "#ffffff", 4.54},
		{"#fff", "#000", 21},
	} {
		a, err := parseHex(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := parseHex(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := contrastRatio(a, b); math.Abs(got-tc.want) > 0.01 {
			t.Errorf("contrast(%s, %s) = %.3f, want %.2f", tc.a, tc.b, got, tc.want)
		}
	}
	if _, err := parseHex("#12345"); err == nil {
		t.Error("parseHex accepted a 5-digit colour")
	}
}

// ---- Contrast ----

type rgb [3]float64 // sRGB channels in [0, 1]

func parseHex(s string) (rgb, error) {
	h, ok := strings.CutPrefix(strings.TrimSpace(s), "#")
	if !ok || (len(h) != 3 && len(h) != 6) {
		return rgb{}, fmt.Errorf("colour %q is not #rgb or #rrggbb", s)
	}
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	var c rgb
	for i := range c {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return rgb{}, fmt.Errorf("colour %q: %w", s, err)
		}
		c[i] = float64(v) / 255
	}
	return c, nil
}

// relativeLuminance follows the WCAG 2.x definition.
func relativeLuminance(c rgb) float64 {
	var lin [3]float64
	for i, v := range c {
		if v <= 0.03928 {
			lin[i] = v / 12.92
		} else {
			lin[i] = math.Pow((v+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*lin[0] + 0.7152*lin[1] + 0.0722*lin[2]
}

func contrastRatio(a, b rgb) float64 {
	la, lb := relativeLuminance(a), relativeLuminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func checkContrast(t *testing.T, th theme, fg, bg string, min float64, where string) {
	t.Helper()
	f, okF := th.colors[fg]
	b, okB := th.colors[bg]
	if !okF || !okB {
		t.Errorf("%s theme, %s: %s or %s is not a colour token", th.name, where, fg, bg)
		return
	}
	if got := contrastRatio(f, b); got < min {
		t.Errorf("%s theme, %s: %s on %s has contrast %.2f, want at least %.1f",
			th.name, where, fg, bg, got, min)
	}
}

// ---- Stylesheet parsing ----

// The parser understands what app.css uses: comments, plain rules and
// @media blocks holding plain rules. Other at-rules are skipped.

type cssRule struct {
	media     string // normalized @media prelude, "" at top level
	selectors []string
	decls     map[string]string
}

func (r cssRule) has(selector string) bool {
	for _, s := range r.selectors {
		if s == selector {
			return true
		}
	}
	return false
}

type stylesheet struct {
	rules []cssRule
}

type theme struct {
	name   string
	colors map[string]rgb
}

var (
	cssComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	cssSpace   = regexp.MustCompile(`\s+`)
	cssVar     = regexp.MustCompile(`^var\((--[a-z0-9-]+)\)$`)
)

func parseStylesheet(t *testing.T) stylesheet {
	t.Helper()
	data, err := fs.ReadFile(files, "app.css")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parseRules(cssComment.ReplaceAllString(string(data), ""), "")
	if err != nil {
		t.Fatalf("app.css: %v", err)
	}
	return stylesheet{rules: rules}
}

func parseRules(src, media string) ([]cssRule, error) {
	var rules []cssRule
	for {
		open := strings.IndexByte(src, '{')
		if open < 0 {
			if strings.TrimSpace(src) != "" {
				return nil, fmt.Errorf("trailing text %q", strings.TrimSpace(src))
			}
			return rules, nil
		}
		prelude := cssSpace.ReplaceAllString(strings.TrimSpace(src[:open]), " ")
		end, err := matchingBrace(src, open)
		if err != nil {
			return nil, fmt.Errorf("block %q: %w", prelude, err)
		}
		body := src[open+1 : end]
		src = src[end+1:]

		switch {
		case strings.HasPrefix(prelude, "@media"):
			inner, err := parseRules(body, prelude)
			if err != nil {
				return nil, err
			}
			rules = append(rules, inner...)
		case strings.HasPrefix(prelude, "@"):
		default:
			r := cssRule{media: media, decls: make(map[string]string)}
			for _, s := range strings.Split(prelude, ",") {
				r.selectors = append(r.selectors, strings.TrimSpace(s))
			}
			for _, d := range strings.Split(body, ";") {
				name, value, ok := strings.Cut(d, ":")
				if !ok {
					continue
				}
				value = cssSpace.ReplaceAllString(strings.TrimSpace(value), " ")
				r.decls[strings.TrimSpace(name)] = strings.TrimSuffix(value, " !important")
			}
			rules = append(rules, r)
		}
	}
}

func matchingBrace(s string, open int) (int, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced braces")
}

// find returns the single rule in media whose selector list includes selector.
func (s stylesheet) find(t *testing.T, media, selector string) cssRule {
	t.Helper()
	var found []cssRule
	for _, r := range s.rules {
		if r.media == media && r.has(selector) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("app.css has %d rules for %q in %q, want 1", len(found), selector, media)
	}
	return found[0]
}

// themes returns the light theme (the top-level :root colour block, also
// selected by [data-theme="light"]) and the dark theme (the block under
// prefers-color-scheme: dark).
func (s stylesheet) themes(t *testing.T) []theme {
	t.Helper()
	light := s.find(t, "", `:root[data-theme="light"]`)
	if !light.has(":root") {
		t.Fatalf(`the light colours are not the default: selectors %q lack :root`, light.selectors)
	}
	dark := s.find(t, "@media (prefers-color-scheme: dark)", `:root:not([data-theme="light"])`)
	return []theme{colorTheme(t, "light", light), colorTheme(t, "dark", dark)}
}

func colorTheme(t *testing.T, name string, r cssRule) theme {
	t.Helper()
	th := theme{name: name, colors: make(map[string]rgb)}
	for prop, value := range r.decls {
		if !strings.HasPrefix(prop, "--color-") {
			continue
		}
		c, err := parseHex(value)
		if err != nil {
			t.Errorf("%s theme, %s: %v", name, prop, err)
			continue
		}
		th.colors[prop] = c
	}
	if len(th.colors) < 10 {
		t.Fatalf("%s theme has only %d colour tokens", name, len(th.colors))
	}
	return th
}

// tokenOf returns the custom property a declaration value refers to when
// the value is exactly var(--name).
func tokenOf(value string) (string, bool) {
	m := cssVar.FindStringSubmatch(value)
	if m == nil {
		return "", false
	}
	return m[1], true
}
