package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"testing"

	"wharf/internal/gateway"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/metrics/metricstest"
	"wharf/internal/probe"
)

// probeReadiness returns /readyz's status and body from base.
func probeReadiness(t *testing.T, base string) (int, probe.Readiness) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rd probe.Readiness
	if err := json.NewDecoder(resp.Body).Decode(&rd); err != nil {
		t.Fatalf("/readyz body: %v", err)
	}
	return resp.StatusCode, rd
}

// A process's own probe listener (the plugin and sweeper roles' metrics and health
// address) answers before the roles run: not ready, naming every role it waits for;
// ready once the gateway started; unready again from the start of shutdown. /metrics
// there is the process's registry.
func TestReadinessFollowsTheRoles(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			var srv *probe.Server
			gw := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, Prepare: func(g *gateway.Gateway) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				srv = probe.Serve(ln, probe.Handler(g.Health, g.Metrics.Handler("")), nil)
				t.Cleanup(func() { _ = srv.Stop(context.Background()) })
				code, rd := probeReadiness(t, "http://"+srv.Addr().String())
				want := []string{gateway.RoleEngine, gateway.RolePlugins, gateway.RoleSweeper}
				if code != http.StatusServiceUnavailable || rd.Roles != probe.Starting || !slices.Equal(rd.Waiting, want) ||
					rd.Database != probe.OK || rd.Bus != probe.OK {
					t.Fatalf("/readyz before the start: %d %+v, want 503 waiting for %v", code, rd, want)
				}
			}})
			base := "http://" + srv.Addr().String()
			if code, rd := probeReadiness(t, base); code != http.StatusOK || rd.Roles != probe.OK || len(rd.Waiting) != 0 {
				t.Fatalf("/readyz once started: %d %+v", code, rd)
			}
			if code, rd := probeReadiness(t, gw.URL()); code != http.StatusOK || rd.Roles != probe.OK {
				t.Fatalf("the API listener's /readyz: %d %+v", code, rd)
			}
			if f := metricstest.Scrape(t, base+"/metrics", ""); f.Value("wharf_database_up", nil) != 1 {
				t.Fatalf("the probe listener's /metrics lacks the health gauges")
			}
			if err := gw.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if code, rd := probeReadiness(t, base); code != http.StatusServiceUnavailable || rd.Roles != probe.Stopping {
				t.Fatalf("/readyz after shutdown began: %d %+v", code, rd)
			}
		})
	}
}
