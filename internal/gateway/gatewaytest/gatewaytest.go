// Package gatewaytest runs a whole gateway inside a test: opened on a temporary data
// directory, given settings and plugin config before it starts, shut down when the test
// ends, with an API token for calls to its REST API.
package gatewaytest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/api"
	"wharf/internal/config"
	"wharf/internal/gateway"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/telemetry"
)

// Token is the API token every gateway Start runs accepts.
const Token = "test-token"

// Options shape a gateway before it starts.
type Options struct {
	// DBURL is PostgreSQL's URL or dbtest.FreshPostgres; empty means SQLite in the data
	// directory.
	DBURL string
	// HTTPAddr is the listen address; empty means a port the system picks.
	HTTPAddr string
	// Log receives the gateway's log; nil means warnings in the test's log.
	Log *slog.Logger
	// Settings are put before the gateway starts.
	Settings map[string]string
	// Plugins are fields merged into plugin instances' configs before the gateway starts.
	Plugins map[persistence.InstanceName]map[string]any
	// DataDir is the data directory; empty means a new temporary one. A test that
	// restarts a gateway passes the directory of the first.
	DataDir string
	// Prepare, when set, runs after the gateway opened and before it starts.
	Prepare func(g *gateway.Gateway)
	// Peer, when set, makes this gateway a second process of the peer's installation, as
	// distributed mode runs one: the peer's database (PostgreSQL), key files and payload
	// directory, and a data directory, holder, bus and listener of its own.
	Peer *Gateway
	// Telemetry is what the OTEL_* variables would ask for; zero exports nothing.
	Telemetry telemetry.Config
	// Roles, when set, are the roles of a process of a distributed installation (with
	// NATSURL and a PostgreSQL DBURL); nil runs every role.
	Roles *gateway.Roles
	// NATSURL is the external bus; empty means the embedded one.
	NATSURL string
	// ShareWith is the data directory of another gateway whose key files and payload
	// directory this one shares, as the processes of one installation do; empty keeps
	// them in DataDir.
	ShareWith string
}

// Gateway is a running gateway and the directory it keeps its data in.
type Gateway struct {
	*gateway.Gateway
	DataDir string
	cfg     config.Config
	t       testing.TB
}

// Start opens and starts a gateway; it is shut down when the test ends.
func Start(t testing.TB, o Options) *Gateway {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = o.DataDir
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.HTTPAddr = o.HTTPAddr
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	cfg.DBURL = dbtest.ResolveURL(t, o.DBURL)
	if o.Peer != nil {
		sharePeer(t, &cfg, o.Peer.cfg)
	}
	cfg.Telemetry = o.Telemetry
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(LogWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	roles := gateway.Standalone()
	if o.Roles != nil {
		roles = *o.Roles
	}
	cfg.NATSURL = o.NATSURL
	if o.ShareWith != "" {
		cfg.SecretsKeyFile = filepath.Join(o.ShareWith, "secrets.key")
		cfg.AuditKeyFile = filepath.Join(o.ShareWith, "audit.key")
		cfg.SessionKeyFile = filepath.Join(o.ShareWith, "session.key")
		cfg.PayloadDir = filepath.Join(o.ShareWith, "payloads")
	}
	if !roles.API {
		cfg.ProbeAddr = "127.0.0.1:0"
	}
	g, err := gateway.OpenRoles(ctx, cfg, log, roles)
	if err != nil {
		t.Fatal(err)
	}
	for name, fields := range o.Plugins {
		mergeConfig(t, g, name, fields)
	}
	for k, v := range o.Settings {
		if err := g.Store.PutSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if o.Prepare != nil {
		o.Prepare(g)
	}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	// A restart on the data directory of an earlier run finds its token in place.
	if _, err := g.Store.FindAPIToken(ctx, api.HashToken(Token)); err != nil {
		if _, err := g.Store.CreateAPIToken(ctx, "test", api.HashToken(Token)); err != nil {
			t.Fatal(err)
		}
	}
	return &Gateway{Gateway: g, DataDir: cfg.DataDir, cfg: cfg, t: t}
}

// sharePeer points cfg at the peer's database, key files and payloads: the payload
// directory of cfg's data directory becomes a link to the peer's.
func sharePeer(t testing.TB, cfg *config.Config, peer config.Config) {
	t.Helper()
	if peer.DBURL == "" {
		t.Fatal("gatewaytest: a peer shares a PostgreSQL database; SQLite serves one process")
	}
	cfg.DBURL = peer.DBURL
	cfg.SecretsKeyFile, cfg.SessionKeyFile, cfg.AuditKeyFile = peer.SecretsKeyPath(), peer.SessionKeyPath(), peer.AuditKeyPath()
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(peer.PayloadsDir(), cfg.PayloadsDir()); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
}

// mergeConfig sets fields in the stored config of a plugin instance.
func mergeConfig(t testing.TB, g *gateway.Gateway, name persistence.InstanceName, fields map[string]any) {
	t.Helper()
	ctx := context.Background()
	rec, err := g.Store.GetPluginConfig(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(rec.Config, &c); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		c[k] = v
	}
	if rec.Config, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Store.UpdatePluginConfig(ctx, rec); err != nil {
		t.Fatal(err)
	}
}

// URL is the gateway's base URL.
func (g *Gateway) URL() string { return "http://" + g.Addr() }

// API calls the REST API with Token; it returns the status and the body.
func (g *Gateway) API(method, path, contentType string, body io.Reader) (int, []byte) {
	g.t.Helper()
	req, err := http.NewRequest(method, g.URL()+path, body)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	req.Header.Set("X-Requested-With", "test")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// FreePort is a loopback TCP port nothing listens on at the moment.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// LogWriter writes each log line to the test's log.
func LogWriter(t testing.TB) io.Writer { return testLog{t} }

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
