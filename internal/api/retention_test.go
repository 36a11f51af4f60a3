package api

import (
	"testing"
	"time"
)

func TestPartyRetention(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		var got retentionBody
		b.must(200, "GET", "/api/v1/partners/acme/retention", "").json(t, &got)
		if got.PayloadDays != nil || got.HistoryDays != nil {
			t.Errorf("a new partner has its own retention: %+v", got)
		}
		b.must(200, "PUT", "/api/v1/partners/acme/retention", `{"payload_retention_days":30,"history_retention_days":null}`)
		b.must(200, "GET", "/api/v1/partners/acme/retention", "").json(t, &got)
		if got.PayloadDays == nil || *got.PayloadDays != 30 || got.HistoryDays != nil {
			t.Errorf("after setting 30 payload days: %+v", got)
		}
		for _, tc := range []struct {
			body, field string
		}{
			{`{"payload_retention_days":-1,"history_retention_days":null}`, "payload_retention_days"},
			{`{"payload_retention_days":null,"history_retention_days":36501}`, "history_retention_days"},
		} {
			if e := b.must(400, "PUT", "/api/v1/partners/acme/retention", tc.body).errorOf(t); e.Details[tc.field] == nil {
				t.Errorf("%s: error %+v does not name %s", tc.body, e, tc.field)
			}
		}
		b.must(404, "PUT", "/api/v1/organizations/nobody/retention", `{"payload_retention_days":1,"history_retention_days":1}`)
		b.must(200, "PUT", "/api/v1/organizations/local/retention", `{"payload_retention_days":0,"history_retention_days":0}`)
		b.must(200, "GET", "/api/v1/organizations/local/retention", "").json(t, &got)
		if got.PayloadDays == nil || *got.PayloadDays != 0 || got.HistoryDays == nil || *got.HistoryDays != 0 {
			t.Errorf("organization kept for ever: %+v", got)
		}
	})
}

func TestHistoryListRequiresARange(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed() // writes no history, but proves a read of a range answers
		from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		for _, tc := range []struct {
			query, field string
		}{
			{"", "from"},
			{"?from=" + from, "to"},
			{"?to=" + to, "from"},
			{"?from=yesterday&to=" + to, "from"},
			{"?from=" + to + "&to=" + from, "to"},
			{"?from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z", "to"},
			{"?from=" + from + "&to=" + to + "&after=-1", "after"},
		} {
			if e := b.must(400, "GET", "/api/v1/history"+tc.query, "").errorOf(t); e.Details[tc.field] == nil {
				t.Errorf("%q: error %+v does not name %s", tc.query, e, tc.field)
			}
		}
		var out struct {
			History []map[string]any `json:"history"`
		}
		b.must(200, "GET", "/api/v1/history?from="+from+"&to="+to, "").json(t, &out)
		if out.History == nil {
			t.Errorf("history is not a list")
		}
	})
}
