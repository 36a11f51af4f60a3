package events

import (
	"net/http"
	"net/url"
	"testing"
)

// FuzzParseQuery feeds the event stream's query parameters and Last-Event-ID header:
// either a query is refused with an error, or it holds only known patterns and a
// non-negative resumption point.
func FuzzParseQuery(f *testing.F) {
	for _, seed := range [][3]string{
		{"", "", ""},
		{"message.*,delivery.failed", "acme", "42"},
		{"session.blocked", "", "0"},
		{"*", "ACME", "-1"},
		{"message.nope", "a b", "9999999999999999999999"},
		{" , ,message.received", "globex", "12abc"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, types, party, last string) {
		r := &http.Request{Header: http.Header{}, URL: &url.URL{RawQuery: url.Values{"types": {types}, "party": {party}, "after": {last}}.Encode()}}
		r.Header.Set("Last-Event-ID", last)
		q, err := ParseQuery(r)
		if err != nil {
			return
		}
		if q.After < 0 {
			t.Fatalf("after %d accepted", q.After)
		}
		for _, p := range q.Types {
			if _, err := ParsePattern(string(p)); err != nil {
				t.Fatalf("pattern %q accepted: %v", p, err)
			}
		}
	})
}
