package gateway_test

import (
	"net/http"
	"testing"

	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/services"
)

// TestAPIProcessReachesPluginProcess: an API process and a plugin process on one
// PostgreSQL database and one external bus, no sweeper. A message sent through the API
// is delivered by the plugin process (the wake-up travelled the bus), and the services
// controls of the API act on the instance the plugin process runs; an instance no
// process serves is refused rather than started in the API process.
func TestAPIProcessReachesPluginProcess(t *testing.T) {
	dist := gatewaytest.StartDistributed(t, dbtest.PostgresURL(t), persistence.PluginFileWriter)
	apiGW, plugGW := dist.API, dist.Plugin
	h := &harness{t: t, g: apiGW.Gateway, gw: apiGW, data: apiGW.DataDir}
	h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme", "display_name": "ACME Corp"}, nil)

	m := h.send("local", "acme", "file_writer_default", "order.edi", []byte("UNA:+.? '"))
	h.waitStatus(m.ID, "delivered")

	apiState := func(name string) string {
		var list struct {
			Services []struct {
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"services"`
		}
		h.json("GET", "/api/v1/services?limit=100", nil, &list)
		for _, s := range list.Services {
			if s.Name == name {
				return s.State
			}
		}
		return ""
	}
	if got := apiState("file_writer_default"); got != "running" {
		t.Fatalf("the API lists file_writer_default as %q, want running (as the plugin process runs it)", got)
	}
	for _, step := range []struct {
		action string
		want   services.State
	}{{"stop", services.StateStopped}, {"start", services.StateRunning}, {"restart", services.StateRunning}} {
		if code := h.do("POST", "/api/v1/services/file-writer/file_writer_default/"+step.action, "application/json", nil, nil); code/100 != 2 {
			t.Fatalf("%s through the API = %d", step.action, code)
		}
		if got := plugGW.InstanceState("file_writer_default"); got != step.want {
			t.Fatalf("after %s the plugin process has the instance %s, want %s", step.action, got, step.want)
		}
		if got := apiState("file_writer_default"); got != string(step.want) {
			t.Fatalf("after %s the API lists the instance %s, want %s", step.action, got, step.want)
		}
	}

	// No process serves the poller: the start is refused and nothing runs in the API.
	if code := h.do("POST", "/api/v1/services/file-poller/file_poller_default/start", "application/json", nil, nil); code != http.StatusConflict {
		t.Fatalf("start of an instance no process serves = %d, want 409", code)
	}
	if got := apiGW.InstanceState("file_poller_default"); got == services.StateRunning {
		t.Fatal("the API process started a plugin instance itself")
	}
}
