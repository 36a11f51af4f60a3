package api

import (
	"testing"
)

// A partner paused and resumed over REST: the state, the refusals with their codes, and
// the audit log naming the caller.
func TestPartnerPauseREST(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		var v pauseView
		b.must(200, "GET", "/api/v1/partners/acme/pause", "").json(t, &v)
		if v.Paused || v.Partner != "acme" {
			t.Fatalf("pause before = %+v", v)
		}
		for _, tt := range []struct {
			name, path, body string
			status           int
			code, field      string
		}{
			{"no reason", "/api/v1/partners/acme/pause", `{}`, 400, "INVALID_INPUT", "reason"},
			{"unknown field", "/api/v1/partners/acme/pause", `{"reason":"x","until":"never"}`, 400, "INVALID_INPUT", ""},
			{"unknown partner", "/api/v1/partners/nobody/pause", `{"reason":"x"}`, 404, "NOT_FOUND", ""},
			{"an organization", "/api/v1/partners/local/pause", `{"reason":"x"}`, 404, "NOT_FOUND", ""},
			{"bad name", "/api/v1/partners/Bad%20Name/resume", `{}`, 400, "INVALID_INPUT", "name"},
			{"resume when not paused", "/api/v1/partners/acme/resume", `{}`, 409, "PARTNER_NOT_PAUSED", ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := b.must(tt.status, "POST", tt.path, tt.body).errorOf(t)
				if e.Code != tt.code || (tt.field != "" && e.Details[tt.field] == nil) {
					t.Fatalf("error = %+v, want %s naming %q", e, tt.code, tt.field)
				}
			})
		}
		b.must(200, "POST", "/api/v1/partners/acme/pause", `{"reason":"their certificate rollover"}`).json(t, &v)
		if !v.Paused || v.Reason != "their certificate rollover" || v.Actor != "token:tester" || v.PausedAt == nil {
			t.Fatalf("pause = %+v", v)
		}
		b.must(200, "GET", "/api/v1/partners/acme/pause", "").json(t, &v)
		if !v.Paused || v.Reason != "their certificate rollover" {
			t.Fatalf("pause read back = %+v", v)
		}
		if e := b.must(409, "POST", "/api/v1/partners/acme/pause", `{"reason":"again"}`).errorOf(t); e.Code != "PARTNER_PAUSED" {
			t.Fatalf("pause twice: %+v", e)
		}
		var res resumeResult
		b.must(200, "POST", "/api/v1/partners/acme/resume", `{}`).json(t, &res)
		if res.Partner != "acme" || res.Paused {
			t.Fatalf("resume = %+v", res)
		}
		b.must(200, "GET", "/api/v1/partners/acme/pause", "").json(t, &v)
		if v.Paused {
			t.Fatalf("still paused: %+v", v)
		}
		var audit struct {
			Events []struct {
				Action   string `json:"action"`
				Actor    string `json:"actor"`
				RecordID string `json:"record_id"`
			} `json:"events"`
		}
		b.must(200, "GET", "/api/v1/audit?kind=partner", "").json(t, &audit)
		var got []string
		for _, e := range audit.Events {
			if e.RecordID == "acme" && (e.Action == "pause" || e.Action == "resume") {
				got = append(got, e.Action+" by "+e.Actor)
			}
		}
		if len(got) != 2 || got[0] == got[1] {
			t.Fatalf("audit = %v, want the pause and the resumption by token:tester", got)
		}
	})
}
