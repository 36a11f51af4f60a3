package probe_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"

	"wharf/internal/probe"
)

type fixed probe.Readiness

func (f fixed) Check(context.Context) probe.Readiness { return probe.Readiness(f) }

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// /readyz is 200 only when the database, the bus and every role are OK, and names what
// is not; /healthz answers regardless; /metrics is served only when given.
func TestProbeListener(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "wharf_up 1\n") })
	for _, tt := range []struct {
		name    string
		rd      probe.Readiness
		metrics http.Handler
		want    int
		waiting []string
	}{
		{"ready", probe.Readiness{Database: probe.OK, Bus: probe.OK, Roles: probe.OK}, metrics, http.StatusOK, nil},
		{"roles starting", probe.Readiness{Database: probe.OK, Bus: probe.OK, Roles: probe.Starting, Waiting: []string{"sweeper"}}, nil, http.StatusServiceUnavailable, []string{"sweeper"}},
		{"database out of reach", probe.Readiness{Database: probe.Unavailable, Bus: probe.OK, Roles: probe.OK}, metrics, http.StatusServiceUnavailable, nil},
		{"bus out of reach", probe.Readiness{Database: probe.OK, Bus: probe.Unavailable, Roles: probe.OK}, nil, http.StatusServiceUnavailable, nil},
		{"stopping", probe.Readiness{Database: probe.OK, Bus: probe.OK, Roles: probe.Stopping}, nil, http.StatusServiceUnavailable, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := probe.Serve(ln, probe.Handler(fixed(tt.rd), tt.metrics), nil)
			defer srv.Stop(context.Background())
			base := "http://" + srv.Addr().String()
			if code, body := get(t, base+"/healthz"); code != http.StatusOK || string(body) != "ok\n" {
				t.Errorf("/healthz: %d %q", code, body)
			}
			code, body := get(t, base+"/readyz")
			var rd probe.Readiness
			if err := json.Unmarshal(body, &rd); err != nil {
				t.Fatalf("/readyz body %q: %v", body, err)
			}
			wantStatus := probe.OK
			if tt.want != http.StatusOK {
				wantStatus = probe.Unavailable
			}
			if code != tt.want || rd.Status != wantStatus || rd.Roles != tt.rd.Roles || !slices.Equal(rd.Waiting, tt.waiting) {
				t.Errorf("/readyz: %d %+v, want %d %s", code, rd, tt.want, wantStatus)
			}
			code, _ = get(t, base+"/metrics")
			if (tt.metrics != nil) != (code == http.StatusOK) {
				t.Errorf("/metrics: %d with metrics given %v", code, tt.metrics != nil)
			}
		})
	}
}
