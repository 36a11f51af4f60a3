package receiver

import (
	"maps"
	"net/http"
	"testing"

	"wharf/internal/persistence"
)

// FuzzHeaderMetadata feeds a partner's header names and values to the metadata reader:
// whatever arrives, what it keeps is metadata the store accepts as it is.
func FuzzHeaderMetadata(f *testing.F) {
	f.Add("Subject", "PO 4711", "X-Order-Id", "17")
	f.Add("X-Api-Token", "secret", "x-", "")
	f.Add("X-\x00", "a\nb", "X-Ünïcode", "\xff")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string) {
		h := http.Header{}
		h[n1] = []string{v1}
		h[n2] = append(h[n2], v2)
		out := headerMetadata(h)
		if len(out) > persistence.MaxMetadataEntries {
			t.Fatalf("%d entries kept", len(out))
		}
		norm, err := persistence.NormalizeMetadata(out)
		if err != nil {
			t.Fatalf("kept metadata %q the store refuses: %v", out, err)
		}
		if len(out) > 0 && !maps.Equal(norm, out) {
			t.Fatalf("kept %q, the store normalizes it to %q", out, norm)
		}
	})
}
