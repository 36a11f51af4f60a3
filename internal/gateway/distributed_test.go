package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"wharf/internal/bus"
	"wharf/internal/gateway"
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
	url := dbtest.PostgresURL(t)
	nats, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{ListenAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nats.Close() })
	natsURL := "nats://" + nats.Addr().String()
	apiGW := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, NATSURL: natsURL, Roles: &gateway.Roles{API: true}})
	plugGW := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, NATSURL: natsURL, ShareWith: apiGW.DataDir,
		Roles: &gateway.Roles{Plugins: true, PluginType: persistence.PluginFileWriter}})
	h := &harness{t: t, g: apiGW.Gateway, gw: apiGW, data: apiGW.DataDir}
	h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme", "display_name": "ACME Corp"}, nil)

	m := h.send("local", "acme", "file_writer_default", "order.edi", []byte("UNA:+.? '"))
	h.waitStatus(m.ID, "delivered")

	state := func(g *gateway.Gateway, name persistence.InstanceName) services.State {
		list, err := g.Services.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range list {
			if st.Name == name {
				return st.State
			}
		}
		return ""
	}
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
		if got := state(plugGW.Gateway, "file_writer_default"); got != step.want {
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
	if got := state(apiGW.Gateway, "file_poller_default"); got == services.StateRunning {
		t.Fatal("the API process started a plugin instance itself")
	}
}
