package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"wharf/internal/module"
	"wharf/internal/protocol/httppost"
)

func TestPluginTypes(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		var list struct {
			Types []pluginTypeView `json:"types"`
			Total int              `json:"total"`
		}
		b.must(200, "GET", "/api/v1/plugins/types", "").json(t, &list)
		roles := map[string]module.Role{}
		for _, pt := range list.Types {
			roles[string(pt.Type)] = pt.Role
		}
		want := map[string]module.Role{"file-poller": module.RoleSource, "file-writer": module.RoleTarget, "http-poster": module.RoleTarget}
		for typ, role := range want {
			if roles[typ] != role {
				t.Errorf("type %s has role %q, want %q (all: %v)", typ, roles[typ], role, roles)
			}
		}
		if list.Total != len(list.Types) {
			t.Errorf("total %d for %d types", list.Total, len(list.Types))
		}
	})
}

func TestPluginConfigs(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		base := "/api/v1/plugins/configs/file-poller"
		var cfg map[string]any
		r := b.must(201, "POST", base, b.pollerJSON("outbox"))
		r.json(t, &cfg)
		if cfg["name"] != "outbox" || cfg["type"] != "file-poller" || cfg["enabled"] != true || cfg["pattern"] != "{to}/{filename}" {
			t.Errorf("created %v", cfg)
		}
		if loc := r.header.Get("Location"); loc != base+"/outbox" {
			t.Errorf("Location = %q", loc)
		}

		b.must(200, "GET", base+"/outbox", "").json(t, &cfg)
		cfg["enabled"] = false
		cfg["interval"] = "5s"
		body, _ := json.Marshal(cfg)
		b.must(200, "PUT", base+"/outbox", string(body)).json(t, &cfg)
		if cfg["enabled"] != false || cfg["interval"] != "5s" {
			t.Errorf("updated %v", cfg)
		}

		var list struct {
			Configs []map[string]any `json:"configs"`
			Total   int              `json:"total"`
		}
		b.must(200, "GET", base, "").json(t, &list)
		if list.Total != 1 || list.Configs[0]["name"] != "outbox" {
			t.Errorf("list %+v", list)
		}
		b.must(200, "GET", "/api/v1/plugins/configs/file-writer", "").json(t, &list)
		if list.Total != 0 || list.Configs == nil {
			t.Errorf("writers %s", body)
		}

		tests := []struct {
			name, method, path, body string
			status                   int
			code, field              string
		}{
			{"unknown field", "POST", base, fmt.Sprintf(`{"name":"p2","directory":%q,"colour":"red"}`, b.dir), 400, "INVALID_INPUT", "colour"},
			{"invalid field", "POST", base, `{"name":"p2","directory":"relative/dir"}`, 400, "INVALID_INPUT", "directory"},
			{"missing name", "POST", base, fmt.Sprintf(`{"directory":%q}`, b.dir), 400, "INVALID_INPUT", "name"},
			{"invalid name", "POST", base, fmt.Sprintf(`{"name":"Bad Name","directory":%q}`, b.dir), 400, "INVALID_INPUT", "name"},
			{"reserved name", "POST", base, fmt.Sprintf(`{"name":"manual","directory":%q}`, b.dir), 400, "INVALID_INPUT", "name"},
			{"malformed", "POST", base, `{"name":`, 400, "INVALID_INPUT", "body"},
			{"unknown type", "POST", "/api/v1/plugins/configs/ftp", `{"name":"x"}`, 400, "INVALID_INPUT", "type"},
			{"name taken by another type", "POST", "/api/v1/plugins/configs/file-writer", fmt.Sprintf(`{"name":"outbox","directory":%q}`, b.dir), 409, "NAME_TAKEN", ""},
			{"rename", "PUT", base + "/outbox", fmt.Sprintf(`{"name":"other","directory":%q}`, b.dir), 400, "INVALID_INPUT", "name"},
			{"wrong type in path", "GET", "/api/v1/plugins/configs/file-writer/outbox", "", 404, "NOT_FOUND", ""},
			{"missing", "GET", base + "/nope", "", 404, "NOT_FOUND", ""},
			{"update missing", "PUT", base + "/nope", fmt.Sprintf(`{"directory":%q}`, b.dir), 404, "NOT_FOUND", ""},
			{"invalid path name", "GET", base + "/Bad", "", 400, "INVALID_INPUT", "name"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := b.must(tt.status, tt.method, tt.path, tt.body).errorOf(t)
				if e.Code != tt.code || (tt.field != "" && e.Details[tt.field] == nil) {
					t.Errorf("error %+v, want %s on %q", e, tt.code, tt.field)
				}
			})
		}
		b.must(200, "GET", base, "").json(t, &list)
		if list.Total != 1 {
			t.Errorf("refused configs were written: %+v", list)
		}

		b.must(204, "DELETE", base+"/outbox", "")
		b.must(404, "GET", base+"/outbox", "")
	})
}

// TestPluginConfigSecrets checks that write-only fields never come back, and that a PUT
// leaving them out keeps them.
func TestPluginConfigSecrets(t *testing.T) {
	const canary = "canary-7f3a9c1e-secret"
	eachStore(t, func(t *testing.T, b *bundle) {
		var bodies []string
		record := func(r response) response { bodies = append(bodies, string(r.body)); return r }
		base := "/api/v1/plugins/configs/http-poster"
		create := fmt.Sprintf(`{"name":"erp","url":"https://erp.example/in","headers":{"X-Plain":"visible"},"secret_headers":{"Authorization":"Bearer %s"}}`, canary)

		var cfg map[string]any
		record(b.must(201, "POST", base, create)).json(t, &cfg)
		if _, ok := cfg["secret_headers"]; ok {
			t.Errorf("created config shows secret_headers: %v", cfg)
		}
		record(b.must(200, "GET", base+"/erp", "")).json(t, &cfg)
		record(b.must(200, "GET", base, ""))

		// The whole object back, without the write-only field: the secret stays.
		cfg["timeout"] = "10s"
		body, _ := json.Marshal(cfg)
		record(b.must(200, "PUT", base+"/erp", string(body)))
		if got := b.secretHeaders(t, "erp")["Authorization"]; got != "Bearer "+canary {
			t.Fatalf("secret after PUT without it = %q", got)
		}

		// Errors do not echo it either.
		bad := fmt.Sprintf(`{"name":"erp2","url":"ftp://x","secret_headers":{"Authorization":"Bearer %s"}}`, canary)
		record(b.must(400, "POST", base, bad))
		bad = fmt.Sprintf(`{"name":"erp3","url":"https://erp.example/in","secret_headers":{"Bad Header":"%s"}}`, canary)
		record(b.must(400, "POST", base, bad))

		// A new value replaces it.
		cfg["secret_headers"] = map[string]string{"Authorization": "Bearer rotated"}
		body, _ = json.Marshal(cfg)
		record(b.must(200, "PUT", base+"/erp", string(body)))
		if got := b.secretHeaders(t, "erp")["Authorization"]; got != "Bearer rotated" {
			t.Fatalf("secret after PUT with a new value = %q", got)
		}
		record(b.must(200, "GET", base+"/erp", ""))

		for _, body := range bodies {
			if strings.Contains(body, canary) || strings.Contains(body, "rotated") {
				t.Errorf("a response shows the secret: %s", body)
			}
		}
		if strings.Contains(b.logs.String(), canary) {
			t.Error("the secret reached the log")
		}
	})
}

// secretHeaders opens the stored instance with the sealer, as the running instance would.
func (b *bundle) secretHeaders(t *testing.T, name string) map[string]string {
	t.Helper()
	rec, err := b.store.GetPluginConfig(context.Background(), "erp")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.Config), "secret") {
		t.Errorf("stored public config holds the write-only field: %s", rec.Config)
	}
	in, err := module.Load(rec, b.sealer)
	if err != nil {
		t.Fatal(err)
	}
	return in.Config.(*httppost.PosterConfig).SecretHeaders
}

// TestPluginConfigRefusalListsEveryField: one 400 names every invalid field in details,
// each under its own key, whether its value does not decode or the config refuses it.
func TestPluginConfigRefusalListsEveryField(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		body := `{"name":"Bad Name","directory":"relative/dir","interval":"soon","batch_size":"many"}`
		e := b.must(400, "POST", "/api/v1/plugins/configs/file-poller", body).errorOf(t)
		if e.Code != "INVALID_INPUT" {
			t.Fatalf("error = %+v", e)
		}
		for _, field := range []string{"name", "directory", "interval", "batch_size"} {
			if e.Details[field] == nil {
				t.Errorf("details lack %s: %v", field, e.Details)
			}
		}
		if msg, _ := e.Details["interval"].(string); !strings.Contains(msg, "duration") {
			t.Errorf("interval's message %q does not say a duration is wanted", msg)
		}
	})
}
