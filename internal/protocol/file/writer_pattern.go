package file

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"wharf/internal/persistence"
)

// WriterPlaceholder is one value a writer pattern can use.
type WriterPlaceholder struct {
	Name  string // with braces: "{from}"
	Help  string
	value func(m *persistence.Message) string
}

// WriterPlaceholders is the one table of writer pattern placeholders: the expansion, the
// validation and the help text all read it.
var WriterPlaceholders = []WriterPlaceholder{
	{"{message_id}", "the message's id", func(m *persistence.Message) string { return strconv.FormatInt(m.ID, 10) }},
	{"{from}", "the sending party", func(m *persistence.Message) string { return string(m.From) }},
	{"{to}", "the receiving party", func(m *persistence.Message) string { return string(m.To) }},
	{"{original_filename}", "the original file name", func(m *persistence.Message) string { return string(m.OriginalFileName) }},
	{"{basename}", "the original file name without its last extension", func(m *persistence.Message) string {
		b, _ := splitExt(string(m.OriginalFileName))
		return b
	}},
	{"{ext}", "the last extension of the original file name, without the dot", func(m *persistence.Message) string {
		_, e := splitExt(string(m.OriginalFileName))
		return e
	}},
	{"{date}", "the day the message was received, UTC, YYYY-MM-DD", func(m *persistence.Message) string {
		return m.CreatedAt.UTC().Format(time.DateOnly)
	}},
	{"{correlation_id}", "the message's correlation id", func(m *persistence.Message) string { return m.CorrelationID }},
}

func splitExt(name string) (base, ext string) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return name, ""
	}
	return name[:i], name[i+1:]
}

func placeholder(name string) (*WriterPlaceholder, bool) {
	for i := range WriterPlaceholders {
		if WriterPlaceholders[i].Name == name {
			return &WriterPlaceholders[i], true
		}
	}
	return nil, false
}

// namePart is a literal or a placeholder within one path segment.
type namePart struct {
	literal string
	ph      *WriterPlaceholder
}

// namePattern is a parsed writer pattern: path segments made of parts.
type namePattern [][]namePart

func parseNamePattern(s string) (namePattern, error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("required")
	case strings.HasPrefix(s, "/"):
		return nil, fmt.Errorf("must be relative to the directory")
	case strings.ContainsRune(s, '\\'):
		return nil, fmt.Errorf(`separate segments with "/", not "\"`)
	case len(s) > 1024:
		return nil, fmt.Errorf("longer than 1024 bytes")
	}
	var unknown []string
	var out namePattern
	for _, seg := range strings.Split(s, "/") {
		switch seg {
		case "":
			return nil, fmt.Errorf("empty segment")
		case ".", "..":
			return nil, fmt.Errorf("segment %q is not allowed", seg)
		}
		var parts []namePart
		rest := seg
		for rest != "" {
			open := strings.IndexAny(rest, "{}")
			if open < 0 {
				parts = append(parts, namePart{literal: rest})
				break
			}
			if rest[open] == '}' {
				return nil, fmt.Errorf("segment %q: unbalanced braces", seg)
			}
			if open > 0 {
				parts = append(parts, namePart{literal: rest[:open]})
			}
			end := strings.IndexAny(rest[open+1:], "{}")
			if end < 0 || rest[open+1+end] != '}' {
				return nil, fmt.Errorf("segment %q: unbalanced braces", seg)
			}
			name := rest[open : open+end+2]
			if ph, ok := placeholder(name); ok {
				parts = append(parts, namePart{ph: ph})
			} else {
				unknown = append(unknown, name)
			}
			rest = rest[open+end+2:]
		}
		out = append(out, parts)
	}
	if len(unknown) > 0 {
		known := make([]string, len(WriterPlaceholders))
		for i, p := range WriterPlaceholders {
			known[i] = p.Name
		}
		return nil, fmt.Errorf("unknown placeholder %s; use %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// render expands the pattern for a message into safe path segments. Values cannot add
// separators: "/" and "\" in them become "_" before a segment is made safe.
func (p namePattern) render(m *persistence.Message) []string {
	out := make([]string, len(p))
	for i, parts := range p {
		var b strings.Builder
		for _, part := range parts {
			if part.ph == nil {
				b.WriteString(part.literal)
				continue
			}
			b.WriteString(strings.NewReplacer("/", "_", `\`, "_").Replace(part.ph.value(m)))
		}
		out[i] = SafeName(b.String())
	}
	return out
}

// RenderPath is the path, relative to the directory and with "/" separators, that the
// pattern gives a message.
func RenderPath(pattern string, m persistence.Message) (string, error) {
	p, err := parseNamePattern(pattern)
	if err != nil {
		return "", err
	}
	return path.Join(p.render(&m)...), nil
}

// maxNameBytes caps one path segment (most file systems allow 255 bytes).
const maxNameBytes = 255

// SafeName makes one path segment safe on Windows and POSIX file systems alike: the
// characters <>:"/\|?* and control characters become "_", trailing dots and spaces are
// removed, so are leading spaces, and a leading dot becomes "_" (persistence.Unhidden:
// nothing lands as a dot file), a reserved device name (CON, PRN, AUX, NUL, COM1–9, LPT1–9, with or without an
// extension) gets a "_" prefix, an empty or dot-only name becomes "_", and the name is
// cut to 255 bytes, keeping a short extension.
func SafeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError, unicode.IsControl(r), strings.ContainsRune(`<>:"/\|?*`, r):
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	name := persistence.Unhidden(strings.TrimRight(b.String(), ". "))
	if name == "" {
		return "_"
	}
	if reservedDeviceName(name) {
		name = "_" + name
	}
	if len(name) > maxNameBytes {
		base, ext := splitExt(name)
		if ext != "" && len(ext) <= 16 {
			ext = "." + ext
		} else {
			base, ext = name, ""
		}
		base = strings.TrimRight(cutUTF8(base, maxNameBytes-1-len(ext)), ". ")
		name = base + ext
		if base == "" {
			name = "_" + ext
		}
	}
	return name
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// reservedDeviceName reports names Windows maps to devices, whatever the extension.
func reservedDeviceName(name string) bool {
	stem, _, _ := strings.Cut(name, ".")
	stem = strings.ToUpper(strings.TrimRight(stem, " "))
	switch stem {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(stem) == 4 && (strings.HasPrefix(stem, "COM") || strings.HasPrefix(stem, "LPT")) {
		return stem[3] >= '1' && stem[3] <= '9'
	}
	if strings.HasPrefix(stem, "COM") || strings.HasPrefix(stem, "LPT") {
		switch stem[3:] {
		case "¹", "²", "³":
			return true
		}
	}
	return false
}
