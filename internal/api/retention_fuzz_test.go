package api

import (
	"errors"
	"net/url"
	"testing"

	"wharf/internal/persistence"
)

// FuzzHistoryQuery reads history list queries: a query is refused with a field error
// naming from, to or after, or gives a range and a cursor that read back from the query.
func FuzzHistoryQuery(f *testing.F) {
	for _, s := range []string{
		"from=2026-01-01T00:00:00Z&to=2026-01-31T00:00:00Z",
		"from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00%2B02:00&after=42",
		"", "from=x", "to=2026-01-01T00:00:00Z", "from=2026-01-01T00:00:00Z&to=y", "from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&after=-1",
		"from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&after=99999999999999999999", "%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		h, err := parseHistoryQuery(q)
		if err != nil {
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || (fe.Field != "from" && fe.Field != "to" && fe.Field != "after") || fe.Message == "" {
				t.Fatalf("%q: %v is not a field error naming from, to or after", raw, err)
			}
			return
		}
		if h.from.IsZero() && q.Get("from") == "" || h.after < 0 {
			t.Fatalf("%q: accepted %+v", raw, h)
		}
	})
}
