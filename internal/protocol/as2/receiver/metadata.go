package receiver

import (
	"net/http"
	"slices"
	"strings"

	"wharf/internal/persistence"
)

// credentialWords mark header names that may carry a credential; such headers never
// become metadata, which operators and REST clients read.
var credentialWords = []string{"auth", "token", "key", "secret", "password", "passwd", "signature", "cookie", "session"}

// headerMetadata is what an AS2 request tells of its document as metadata: the Subject
// header as subject and every X- header under its lower-cased name. Entries that do not
// fit the metadata bounds (a name outside [a-z0-9_-], a long or control-laden value, more
// than persistence.MaxMetadataEntries in all, taken in name order) are dropped: a partner's
// extra headers never fail a message. A header given twice counts by its first value.
func headerMetadata(h http.Header) map[string]string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	out := map[string]string{}
	for _, name := range names {
		lower := strings.ToLower(name)
		if lower != "subject" && !strings.HasPrefix(lower, "x-") {
			continue
		}
		if slices.ContainsFunc(credentialWords, func(w string) bool { return strings.Contains(lower, w) }) {
			continue
		}
		v := h.Get(name)
		n, err := persistence.ParseMetadataName(lower)
		if err != nil || v == "" || persistence.CheckMetadataValue(v) != nil {
			continue
		}
		if len(out) == persistence.MaxMetadataEntries {
			break
		}
		out[n] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
