package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"wharf/internal/persistence"
)

// FuzzDecodeStrict decodes request bodies into the REST API's input types as their
// handlers do. A body is refused with a field error naming what was wrong (a 400), or
// decodes to a value that encodes and decodes back to itself (settings: to raw values
// that are JSON).
func FuzzDecodeStrict(f *testing.F) {
	targets := []func() any{
		func() any { return &routeInput{} },
		func() any { return &partyInput{} },
		func() any { return &providerInput{} },
		func() any { return &map[string]json.RawMessage{} },
		func() any { return &retentionBody{} },
	}
	for _, s := range []string{
		`{"source":"inbox","from":"acme","to":"local","target":"as2_out","ordered":true}`,
		`{"name":"acme","display_name":"ACME"}`,
		`{"name":"sso","issuer_url":"https://id.example","client_id":"c","client_secret":"s","enabled":false}`,
		`{"retention_days":"30"}`, `{"payload_retention_days":30,"history_retention_days":null}`, `{"name":"a","colour":"red"}`, `{"nested":{"n":"x"}}`, `{"name":"a"}{}`,
		`{"name":1}`, `[]`, `"x"`, ``, `{"name":"\ud800"}`, `{"name":"a"} x`,
	} {
		for i := range targets {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		newDst := targets[int(which)%len(targets)]
		dst := newDst()
		err := decodeStrict(raw, dst)
		if err != nil {
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Message == "" {
				t.Fatalf("%T: refusal %v is not a field error", dst, err)
			}
			return
		}
		if m, ok := dst.(*map[string]json.RawMessage); ok {
			// Raw values are kept as sent (encoding would escape them anew): each is
			// one JSON value for the handler to read.
			for k, v := range *m {
				if !json.Valid(v) {
					t.Fatalf("setting %q holds %q, not JSON", k, v)
				}
			}
			return
		}
		enc, err := json.Marshal(dst)
		if err != nil {
			t.Fatalf("%T: encode what decoded: %v", dst, err)
		}
		again := newDst()
		if err := decodeStrict(enc, again); err != nil || !reflect.DeepEqual(dst, again) {
			t.Fatalf("%T: %s decodes to %+v, then %s to %+v (%v)", dst, raw, dst, enc, again, err)
		}
	})
}
