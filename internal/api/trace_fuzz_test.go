package api

import (
	"errors"
	"net/http/httptest"
	"testing"

	"wharf/internal/persistence"
)

// FuzzParseTraceQuery reads a trace's query string as the handler does. A query is
// refused with a field error naming the parameter, or names exactly one id that every
// source would have admitted.
func FuzzParseTraceQuery(f *testing.F) {
	for _, s := range []string{"origin_event_id=erp-1", "correlation_id=PO-4711", "", "origin_event_id=a&correlation_id=b",
		"correlation_id=a&correlation_id=b", "since=x", "correlation_id=%00", "origin_event_id=%E2%80%8B", "origin_event_id=%ff",
		"correlation_id=a;b", "origin_event_id"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/api/v1/trace", nil)
		r.URL.RawQuery = raw
		q, err := parseTraceQuery(r)
		if err != nil {
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Message == "" {
				t.Fatalf("%q: refusal %v is not a field error", raw, err)
			}
			return
		}
		if (q.OriginEventID == "") == (q.CorrelationID == "") {
			t.Fatalf("%q: admitted %+v, not exactly one id", raw, q)
		}
		if persistence.CheckReference(q.OriginEventID) != nil || persistence.CheckReference(q.CorrelationID) != nil {
			t.Fatalf("%q: admitted %+v", raw, q)
		}
	})
}
