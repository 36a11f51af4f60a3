package file

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"wharf/internal/persistence"
)

// FuzzParseSidecar reads <file>.meta.json as the poller does. A sidecar is refused with
// a message naming it, or gives ids within bounds and free of control characters that
// encode back to a sidecar reading the same.
func FuzzParseSidecar(f *testing.F) {
	for _, s := range []string{
		`{"correlation_id":"PO-4711","origin_event_id":"erp-9f1c"}`, `{"correlation_id":"c"}`, `{}`,
		`{"correlation_id":"a\u0007"}`, `{"origin_event_id":"a\u200bb"}`, `{"colour":"red"}`, `{"correlation_id":"c"} {}`, `{"correlation_id":1}`,
		`{"origin_event_id":"` + strings.Repeat("x", persistence.MaxReferenceLen+1) + `"}`, `null`, ``, `{"correlation_id":"\ud800"}`,
		`{"metadata":{"Order":"17","x-erp":"a b"}}`, `{"metadata":{"bad name":"x"}}`, `{"metadata":{"o":"a\u0000"}}`,
		`{"metadata":{"o":1}}`, `{"metadata":{"a":"1","A":"2"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSidecar(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sidecar: ") {
				t.Fatalf("refusal %q does not name the sidecar", err)
			}
			return
		}
		for _, v := range []string{s.CorrelationID, s.OriginEventID} {
			if len(v) > persistence.MaxReferenceLen || strings.IndexFunc(v, unicode.IsControl) >= 0 || strings.IndexFunc(v, notPrint) >= 0 {
				t.Fatalf("id %q accepted", v)
			}
		}
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseSidecar(enc)
		for k, v := range s.Metadata {
			if _, err := persistence.ParseMetadataName(k); err != nil || k != strings.ToLower(k) || persistence.CheckMetadataValue(v) != nil {
				t.Fatalf("metadata %q=%q accepted", k, v)
			}
		}
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("%+v encodes as %s, which reads as %+v (%v)", s, enc, again, err)
		}
	})
}

func notPrint(r rune) bool { return !unicode.IsPrint(r) }
