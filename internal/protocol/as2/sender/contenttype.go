package sender

import (
	"fmt"
	"mime"
	"strings"

	"wharf/internal/persistence"
)

// maxContentTypes bounds the extension map of an as2-sender instance.
const maxContentTypes = 200

// contentTypeFor labels the document inside the envelope: the media type of the longest
// extension of fileName in byExtension (compared without regard to case, so "tar.gz"
// wins over "gz"), else the instance's default.
func contentTypeFor(fileName string, byExtension map[string]string, fallback string) string {
	name := strings.ToLower(fileName)
	best, bestLen := fallback, 0
	for ext, ct := range byExtension {
		if len(ext) > bestLen && strings.HasSuffix(name, "."+ext) && len(name) > len(ext)+1 {
			best, bestLen = ct, len(ext)
		}
	}
	return best
}

// validateContentTypes checks the extension map: each key an extension written in lower
// case without the leading dot (letters, digits, '-', '_', and dots between parts), each
// value a media type that fits a header on one line.
func validateContentTypes(m map[string]string) error {
	if len(m) > maxContentTypes {
		return &persistence.FieldError{Field: "content_types", Message: fmt.Sprintf("at most %d extensions", maxContentTypes)}
	}
	for ext, ct := range m {
		if err := checkExtension(ext); err != nil {
			return &persistence.FieldError{Field: "content_types", Message: fmt.Sprintf("extension %q: %v", ext, err)}
		}
		if !validMediaType(ct) {
			return &persistence.FieldError{Field: "content_types",
				Message: fmt.Sprintf("extension %q: %q is not a media type such as application/xml", ext, ct)}
		}
	}
	return nil
}

func checkExtension(ext string) error {
	switch {
	case ext == "":
		return fmt.Errorf("empty")
	case strings.HasPrefix(ext, "."):
		return fmt.Errorf("write it without the leading dot")
	case len(ext) > 32:
		return fmt.Errorf("longer than 32 characters")
	case strings.HasSuffix(ext, ".") || strings.Contains(ext, ".."):
		return fmt.Errorf("dots only between parts")
	}
	for _, r := range ext {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("only lower-case letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// validMediaType accepts type/subtype with optional parameters, on one line.
func validMediaType(s string) bool {
	mt, _, err := mime.ParseMediaType(s)
	return err == nil && strings.Contains(mt, "/") && !strings.ContainsAny(s, "\r\n")
}
