package api

import (
	"net/url"
	"strings"
	"testing"
)

func TestTrace(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		for _, corr := range []string{"PO-4711", "PO-4711", "PO-9"} {
			r := b.upload([]part{{name: "from", value: "local"}, {name: "to", value: "acme"}, {name: "target", value: "inbox"},
				{name: "correlation_id", value: corr}, {name: "origin_event_id", value: "erp <" + corr + ">"}, {name: "file", fileName: "order.edi", value: "x"}})
			if r.status != 201 {
				t.Fatalf("send = %d %s", r.status, r.body)
			}
		}

		t.Run("by correlation id", func(t *testing.T) {
			var body traceBody
			b.must(200, "GET", "/api/v1/trace?correlation_id=PO-4711", "").json(t, &body)
			if body.CorrelationID != "PO-4711" || body.Limit != 200 || body.Truncated || len(body.Messages) != 2 {
				t.Fatalf("trace %+v", body)
			}
			for _, m := range body.Messages {
				if m.Status == "" || len(m.Deliveries) != 1 || m.Deliveries[0].State != "queued" || len(m.History) < 2 {
					t.Errorf("message %+v", m)
				}
				for _, h := range m.History {
					if h.CorrelationID != "PO-4711" || h.Actor == "" {
						t.Errorf("history line %+v", h)
					}
				}
			}
		})
		t.Run("by origin event id", func(t *testing.T) {
			var body traceBody
			b.must(200, "GET", "/api/v1/trace?origin_event_id="+url.QueryEscape("erp <PO-9>"), "").json(t, &body)
			if len(body.Messages) != 1 || body.Messages[0].CorrelationID != "PO-9" {
				t.Fatalf("trace %+v", body)
			}
		})
		t.Run("nothing found is an empty list", func(t *testing.T) {
			r := b.must(200, "GET", "/api/v1/trace?origin_event_id=nothing", "")
			if !strings.Contains(string(r.body), `"messages":[]`) {
				t.Fatalf("body %s", r.body)
			}
		})

		for _, tc := range []struct {
			name, query, field string
		}{
			{"neither id", "", "origin_event_id"},
			{"both ids", "origin_event_id=a&correlation_id=b", "correlation_id"},
			{"an unknown parameter", "correlation_id=a&since=2026-01-01T00:00:00Z", "since"},
			{"an id twice", "correlation_id=a&correlation_id=b", "correlation_id"},
			{"a control character", "correlation_id=a%0Ab", "correlation_id"},
			{"too long", "origin_event_id=" + strings.Repeat("x", 256), "origin_event_id"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := b.do("GET", "/api/v1/trace?"+tc.query, "")
				if r.status != 400 {
					t.Fatalf("status %d %s", r.status, r.body)
				}
				e := r.errorOf(t)
				if e.Code != "INVALID_INPUT" || e.Details[tc.field] == nil {
					t.Fatalf("error %+v, want one naming %s", e, tc.field)
				}
			})
		}
	})
}
