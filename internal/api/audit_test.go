package api

import (
	"strings"
	"testing"
)

// TestAuditREST changes records over REST and reads the events back: the token is the
// actor, filters select, verify succeeds, and bad filters are refused by name.
func TestAuditREST(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.must(201, "POST", "/api/v1/partners", `{"name":"acme","display_name":"ACME"}`)
		b.must(200, "PUT", "/api/v1/partners/acme", `{"display_name":"ACME Corp"}`)
		b.must(204, "DELETE", "/api/v1/partners/acme", "")

		var list struct {
			Events []struct {
				ID      int64  `json:"id"`
				Actor   string `json:"actor"`
				Action  string `json:"action"`
				Kind    string `json:"kind"`
				Changes []struct {
					Path string `json:"path"`
					Old  any    `json:"old"`
					New  any    `json:"new"`
				} `json:"changes"`
			} `json:"events"`
			Total int `json:"total"`
		}
		b.must(200, "GET", "/api/v1/audit?kind=partner&record_id=acme", "").json(t, &list)
		if list.Total != 3 || len(list.Events) != 3 {
			t.Fatalf("events = %+v", list)
		}
		up := list.Events[1] // newest first: delete, update, create
		if up.Action != "update" || up.Actor != "token:tester" || len(up.Changes) != 1 ||
			up.Changes[0].Path != "display_name" || up.Changes[0].Old != "ACME" || up.Changes[0].New != "ACME Corp" {
			t.Errorf("update event = %+v", up)
		}
		b.must(200, "GET", "/api/v1/audit?action=delete&kind=partner", "").json(t, &list)
		if list.Total != 1 || list.Events[0].Action != "delete" {
			t.Errorf("action filter: %+v", list)
		}

		var v struct {
			OK       bool  `json:"ok"`
			Checked  int   `json:"checked"`
			Problems []any `json:"problems"`
		}
		b.must(200, "POST", "/api/v1/audit/verify", `{}`).json(t, &v)
		if !v.OK || v.Checked < 3 || len(v.Problems) != 0 {
			t.Errorf("verify = %+v", v)
		}

		for q, field := range map[string]string{"since=yesterday": "since", "after_id=-1": "after_id", "colour=red": "colour"} {
			r := b.must(400, "GET", "/api/v1/audit?"+q, "")
			if e := r.errorOf(t); !strings.Contains(string(r.body), `"`+field+`"`) {
				t.Errorf("GET /api/v1/audit?%s: %+v does not name %s", q, e, field)
			}
		}
	})
}
