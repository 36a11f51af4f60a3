package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParties(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		for _, collection := range []string{"organizations", "partners"} {
			t.Run(collection, func(t *testing.T) {
				base := "/api/v1/" + collection
				var p partyView
				r := b.must(201, "POST", base, `{"name":"acme","display_name":"  ACME Corp  "}`)
				r.json(t, &p)
				if p.Name != "acme" || p.DisplayName != "ACME Corp" || p.CreatedAt.IsZero() {
					t.Errorf("created %+v", p)
				}
				if loc := r.header.Get("Location"); loc != base+"/acme" {
					t.Errorf("Location = %q", loc)
				}
				var raw map[string]any
				r.json(t, &raw)
				for _, k := range []string{"name", "display_name", "created_at", "updated_at"} {
					if _, ok := raw[k]; !ok {
						t.Errorf("party lacks %s: %s", k, r.body)
					}
				}

				b.must(201, "POST", base, `{"name":"globex"}`).json(t, &p)
				if p.DisplayName != "globex" {
					t.Errorf("empty display name became %q", p.DisplayName)
				}

				if e := b.must(409, "POST", base, `{"name":"acme"}`).errorOf(t); e.Code != "PARTY_EXISTS" {
					t.Errorf("duplicate: %s", e.Code)
				}

				b.must(200, "GET", base+"/acme", "").json(t, &p)
				if p.DisplayName != "ACME Corp" {
					t.Errorf("got %+v", p)
				}

				var list struct {
					Items  []partyView `json:"-"`
					Total  int         `json:"total"`
					Limit  int         `json:"limit"`
					Offset int         `json:"offset"`
				}
				r = b.must(200, "GET", base+"?limit=1&offset=1", "")
				r.json(t, &list)
				var items map[string]json.RawMessage
				r.json(t, &items)
				json.Unmarshal(items[collection], &list.Items)
				if list.Total != 2 || list.Limit != 1 || list.Offset != 1 || len(list.Items) != 1 || list.Items[0].Name != "globex" {
					t.Errorf("list = %s", r.body)
				}

				b.must(200, "PUT", base+"/acme", `{"name":"acme","display_name":"ACME Inc"}`).json(t, &p)
				if p.DisplayName != "ACME Inc" {
					t.Errorf("updated %+v", p)
				}
				b.must(200, "PUT", base+"/acme", `{"display_name":"ACME Ltd"}`)
				if e := b.must(400, "PUT", base+"/acme", `{"name":"other","display_name":"x"}`).errorOf(t); e.Details["name"] == nil {
					t.Errorf("rename: %+v", e)
				}
				b.must(404, "PUT", base+"/nobody", `{"display_name":"x"}`)

				b.must(204, "DELETE", base+"/globex", "")
				b.must(404, "GET", base+"/globex", "")
				b.must(404, "DELETE", base+"/globex", "")
			})
		}
	})
}

func TestPartyValidation(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		tests := []struct {
			name, body, field string
		}{
			{"upper case name", `{"name":"ACME"}`, "name"},
			{"space in name", `{"name":"ac me"}`, "name"},
			{"empty name", `{"name":""}`, "name"},
			{"missing name", `{"display_name":"x"}`, "name"},
			{"long name", `{"name":"` + strings.Repeat("a", 65) + `"}`, "name"},
			{"star name", `{"name":"*"}`, "name"},
			{"long display name", `{"name":"ok","display_name":"` + strings.Repeat("x", 201) + `"}`, "display_name"},
			{"control character", `{"name":"ok","display_name":"a\u0007b"}`, "display_name"},
			{"name of wrong type", `{"name":5}`, "name"},
			{"unknown field", `{"name":"ok","colour":"red"}`, "colour"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := b.must(400, "POST", "/api/v1/partners", tt.body).errorOf(t)
				if e.Code != "INVALID_INPUT" || e.Details[tt.field] == nil {
					t.Errorf("error = %+v, want INVALID_INPUT on %s", e, tt.field)
				}
			})
		}
		var list map[string]any
		b.must(200, "GET", "/api/v1/partners", "").json(t, &list)
		if list["total"].(float64) != 0 {
			t.Errorf("refused input was written: %v", list)
		}
		if e := b.must(400, "GET", "/api/v1/partners/Not%20Valid", "").errorOf(t); e.Details["name"] == nil {
			t.Errorf("invalid path name: %+v", e)
		}
		if e := b.must(400, "GET", "/api/v1/partners?limit=0", "").errorOf(t); e.Details["limit"] == nil {
			t.Errorf("bad limit: %+v", e)
		}
	})
}

func TestStrictRequests(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		t.Run("media type", func(t *testing.T) {
			for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", ""} {
				r := b.do("POST", "/api/v1/partners", `{"name":"acme"}`, withContentType(ct))
				if r.status != 415 || r.errorOf(t).Code != "UNSUPPORTED_MEDIA_TYPE" {
					t.Errorf("Content-Type %q: %d %s", ct, r.status, r.body)
				}
			}
			b.must(404, "GET", "/api/v1/partners/acme", "")
			b.must(201, "POST", "/api/v1/partners", `{"name":"acme"}`, withContentType("application/json; charset=utf-8"))
			for _, path := range []string{"/api/v1/settings", "/api/v1/partners/acme"} {
				if r := b.do("PUT", path, `{}`, withContentType("text/plain")); r.status != 415 {
					t.Errorf("PUT %s as text/plain: %d", path, r.status)
				}
			}
		})
		t.Run("malformed JSON", func(t *testing.T) {
			for _, body := range []string{`{"name":`, `{"name":"x"} {"name":"y"}`, `not json`, `{"name":"x",}`, `null`} {
				e := b.must(400, "POST", "/api/v1/partners", body).errorOf(t)
				if e.Code != "INVALID_INPUT" || (e.Details["body"] == nil && e.Details["name"] == nil) {
					t.Errorf("%s: %+v", body, e)
				}
			}
		})
		t.Run("body limit", func(t *testing.T) {
			big := `{"name":"big","display_name":"` + strings.Repeat("x", 1<<20) + `"}`
			if e := b.must(413, "POST", "/api/v1/partners", big).errorOf(t); e.Code != "PAYLOAD_TOO_LARGE" {
				t.Errorf("code %s", e.Code)
			}
			b.must(404, "GET", "/api/v1/partners/big", "")
		})
	})
}
