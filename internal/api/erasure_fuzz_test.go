package api

import (
	"encoding/json"
	"errors"
	"testing"

	"wharf/internal/persistence"
)

// FuzzErasureBody decodes the body of POST /api/v1/erasures and checks it as the handler
// does: a refusal is a field error naming what was wrong; an accepted filter names a
// valid party and a range that ends after it starts, and encodes and decodes back to
// itself.
func FuzzErasureBody(f *testing.F) {
	for _, s := range []string{
		`{"party":"acme","from":"2026-01-01T00:00:00Z","to":"2026-02-01T00:00:00Z"}`,
		`{"party":"acme","from":"2026-02-01T00:00:00+01:00","to":"2026-01-01T00:00:00Z"}`,
		`{"party":"ACME","from":"2026-01-01","to":"x"}`, `{"party":"acme"}`, `{}`, `{"party":1}`,
		`{"party":"acme","since":"2026-01-01T00:00:00Z"}`, `[]`, ``, `{"party":"acme"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var flt persistence.ErasureFilter
		err := decodeStrict(raw, &flt)
		if err == nil {
			err = flt.Check()
		}
		if err != nil {
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Message == "" {
				t.Fatalf("refusal %v is not a field error", err)
			}
			return
		}
		if _, perr := persistence.ParsePartyName(string(flt.Party)); perr != nil || !flt.To.After(flt.From) {
			t.Fatalf("accepted %+v", flt)
		}
		enc, err := json.Marshal(flt)
		if err != nil {
			t.Fatalf("encode %+v: %v", flt, err)
		}
		var again persistence.ErasureFilter
		if err := decodeStrict(enc, &again); err != nil || again.Party != flt.Party || !again.From.Equal(flt.From) || !again.To.Equal(flt.To) {
			t.Fatalf("%s decodes to %+v, then %s to %+v (%v)", raw, flt, enc, again, err)
		}
	})
}
