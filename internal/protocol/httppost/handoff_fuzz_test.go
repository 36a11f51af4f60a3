package httppost

import (
	"strings"
	"testing"
)

// FuzzJSONReference feeds an in-house system's answer body to the reference reader: it
// never panics, and what it returns is taken from the body, never longer than it.
func FuzzJSONReference(f *testing.F) {
	for _, seed := range []string{
		`{"job_id":"J-17"}`, `{"job_id":17}`, `{"job_id":1e400}`, `{"job_id":null}`,
		`{"job_id":["a"]}`, `[1,2]`, `{"job_id":"\u0000"}`, `{`, ``, strings.Repeat(`{"a":`, 1000),
	} {
		f.Add([]byte(seed), "job_id")
	}
	f.Fuzz(func(t *testing.T, body []byte, field string) {
		ref, err := jsonReference(strings.NewReader(string(body)), field)
		if err != nil {
			if ref != "" {
				t.Fatalf("a refusal returned a reference %q", ref)
			}
			return
		}
		if len(ref) > len(body) {
			t.Fatalf("reference %q is longer than the body (%d bytes)", ref, len(body))
		}
	})
}
