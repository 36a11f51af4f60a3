package api

import (
	"testing"

	"wharf/internal/settings"
)

func TestSettings(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		var got map[string]string
		b.must(200, "GET", "/api/v1/settings", "").json(t, &got)
		for k, v := range settings.Defaults() {
			if got[k] != v {
				t.Errorf("%s = %q, want default %q", k, got[k], v)
			}
		}

		b.must(200, "PUT", "/api/v1/settings", `{"max_dispatches":"7","display_timezone":"Europe/Berlin"}`).json(t, &got)
		if got["max_dispatches"] != "7" || got["display_timezone"] != "Europe/Berlin" || got["sweep_interval"] != "5s" {
			t.Errorf("after PUT: %v", got)
		}

		tests := []struct {
			name, body string
			fields     []string
		}{
			{"one bad among good", `{"max_dispatches":"9","sweep_interval":"2h"}`, []string{"sweep_interval"}},
			{"two bad", `{"max_dispatches":"0","lease_duration":"1s"}`, []string{"max_dispatches", "lease_duration"}},
			{"unknown key", `{"max_dispatches":"9","colour":"red"}`, []string{"colour"}},
			{"not a string", `{"max_dispatches":9}`, []string{"max_dispatches"}},
			{"not an object", `["max_dispatches"]`, []string{"body"}},
			{"null", `null`, []string{"body"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := b.must(400, "PUT", "/api/v1/settings", tt.body).errorOf(t)
				for _, f := range tt.fields {
					if e.Details[f] == nil {
						t.Errorf("details %v lack %s", e.Details, f)
					}
				}
			})
		}
		b.must(200, "GET", "/api/v1/settings", "").json(t, &got)
		if got["max_dispatches"] != "7" {
			t.Errorf("a refused PUT wrote: %v", got)
		}
	})
}
