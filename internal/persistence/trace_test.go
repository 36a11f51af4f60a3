package persistence

import (
	"errors"
	"strings"
	"testing"
)

func TestTraceQueryCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     TraceQuery
		field string // "" for a good query
	}{
		{"origin event id", TraceQuery{OriginEventID: "<a@b>"}, ""},
		{"correlation id", TraceQuery{CorrelationID: "PO-4711"}, ""},
		{"neither", TraceQuery{}, "origin_event_id"},
		{"both", TraceQuery{OriginEventID: "a", CorrelationID: "b"}, "correlation_id"},
		{"control character", TraceQuery{CorrelationID: "a\nb"}, "correlation_id"},
		{"too long", TraceQuery{OriginEventID: strings.Repeat("x", MaxReferenceLen+1)}, "origin_event_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.q.Check()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("error %v, want one for %s", err, tc.field)
			}
		})
	}
}
