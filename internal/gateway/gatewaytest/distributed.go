package gatewaytest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/bus"
	"wharf/internal/gateway"
	"wharf/internal/persistence"
	"wharf/internal/services"
)

// Distributed is an installation of separate processes, as the distributed roles run it:
// an API process and a plugin process on one PostgreSQL database and a bus on loopback.
type Distributed struct {
	API, Plugin *Gateway
	DBURL       string
	NATSURL     string // for further processes of the installation
}

// StartDistributed starts the bus, the API process and a plugin process serving the
// instances of pluginType, on the PostgreSQL database dbURL.
func StartDistributed(t testing.TB, dbURL string, pluginType persistence.PluginType) Distributed {
	t.Helper()
	nats, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{ListenAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nats.Close() })
	d := Distributed{DBURL: dbURL, NATSURL: "nats://" + nats.Addr().String()}
	d.API = Start(t, Options{DBURL: dbURL, NATSURL: d.NATSURL, Roles: &gateway.Roles{API: true}})
	d.Plugin = d.StartPlugin(t, pluginType)
	return d
}

// StartPlugin starts one more plugin process of the installation, serving pluginType.
func (d Distributed) StartPlugin(t testing.TB, pluginType persistence.PluginType) *Gateway {
	t.Helper()
	return Start(t, Options{DBURL: d.DBURL, NATSURL: d.NATSURL, ShareWith: d.API.DataDir,
		Roles: &gateway.Roles{Plugins: true, PluginType: pluginType}})
}

// ProcessID is the process's id, as its heartbeats and bus subjects carry it.
func (g *Gateway) ProcessID() string {
	g.t.Helper()
	raw, err := os.ReadFile(filepath.Join(g.DataDir, "holder.id"))
	if err != nil {
		g.t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

// InstanceState is the state of the plugin instance name as this process runs it; empty
// when the process does not list it.
func (g *Gateway) InstanceState(name persistence.InstanceName) services.State {
	g.t.Helper()
	list, err := g.Services.List(context.Background())
	if err != nil {
		g.t.Fatal(err)
	}
	for _, st := range list {
		if st.Name == name {
			return st.State
		}
	}
	return ""
}
