package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"wharf/internal/alert"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/metrics/metricstest"
	"wharf/internal/notification"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/services"
)

// dbProxy forwards loopback TCP connections to a database; cut closes the listener and
// every connection it forwards, as a database that stops answering does, and mend
// listens again on the same address.
type dbProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newDBProxy(t *testing.T, target string) *dbProxy {
	p := &dbProxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.listen("127.0.0.1:0")
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

func (p *dbProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.forward(c)
		}
	}()
}

func (p *dbProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(pair[0], pair[1])
			pair[0].Close()
			pair[1].Close()
		}()
	}
}

func (p *dbProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *dbProxy) mend() { p.listen(p.addr) }

// readyz returns /readyz's status and body.
func readyz(t *testing.T, gw *gatewaytest.Gateway) (int, map[string]string) {
	t.Helper()
	resp, err := http.Get(gw.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("/readyz body: %v", err)
	}
	return resp.StatusCode, body
}

func getStatus(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// PostgreSQL stops answering mid-run: /healthz stays 200, /readyz turns 503 naming the
// database, the REST API answers 503 DATABASE_UNAVAILABLE, running services read
// degraded, and database_unavailable is raised and held. When the database answers
// again, /readyz is 200, the services run, and the alert is recorded, sent to the
// notifier and resolved.
func TestDatabaseOutageShowsAndClears(t *testing.T) {
	dbURL := dbtest.PostgresURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newDBProxy(t, u.Host)
	u.Host = proxy.addr
	receiver := &hook{}
	hookSrv := httptest.NewServer(receiver)
	defer hookSrv.Close()
	gw := gatewaytest.Start(t, gatewaytest.Options{DBURL: u.String(),
		Settings: map[string]string{"health_check_interval": "1s"}})
	h := &harness{t: t, g: gw.Gateway, gw: gw, data: gw.DataDir}
	h.mustJSON("POST", "/api/v1/plugins/configs/notification-webhook", map[string]any{"name": "ops",
		"url": hookSrv.URL + "/hook", "format": "generic", "signing_secret": "0123456789abcdef-secret"}, nil)
	h.mustJSON("POST", "/api/v1/services/notification-webhook/ops/start", map[string]any{}, nil)
	if code, body := readyz(t, gw); code != http.StatusOK || body["database"] != "ok" || body["bus"] != "ok" || body["roles"] != "ok" {
		t.Fatalf("/readyz before the outage: %d %v", code, body)
	}
	if up := metricstest.Scrape(t, gw.URL()+"/metrics", "").Value("wharf_database_up", nil); up != 1 {
		t.Fatalf("wharf_database_up before the outage: %v", up)
	}

	proxy.cut()
	poll(t, "/readyz to fail", func() bool { code, _ := readyz(t, gw); return code == http.StatusServiceUnavailable })
	if _, body := readyz(t, gw); body["status"] != "unavailable" || body["database"] != "unavailable" || body["bus"] != "ok" {
		t.Fatalf("/readyz during the outage: %v", body)
	}
	if code := getStatus(t, gw.URL()+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz during the outage: %d, want 200 (the process lives)", code)
	}
	// /metrics still answers, without what only the database knows.
	if f := metricstest.Scrape(t, gw.URL()+"/metrics", ""); f.Value("wharf_database_up", nil) != 0 || f.Value("wharf_bus_up", nil) != 1 {
		t.Fatalf("during the outage wharf_database_up = %v, wharf_bus_up = %v; want 0 and 1",
			f.Value("wharf_database_up", nil), f.Value("wharf_bus_up", nil))
	}
	status, body := gw.API("GET", "/api/v1/messages", "", nil)
	var apiErr struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(body, &apiErr)
	if status != http.StatusServiceUnavailable || apiErr.Error.Code != "DATABASE_UNAVAILABLE" {
		t.Fatalf("REST during the outage: %d %s, want 503 DATABASE_UNAVAILABLE", status, body)
	}
	list, err := gw.Services.List(context.Background())
	if err != nil {
		t.Fatalf("services during the outage: %v", err)
	}
	degraded := 0
	for _, st := range list {
		if st.State == services.StateRunning {
			t.Errorf("%s reads running during the outage", st.Name)
		}
		if st.State == services.StateDegraded {
			degraded++
		}
	}
	if degraded == 0 {
		t.Fatalf("no service reads degraded during the outage: %+v", list)
	}
	rt := gw.Runtimes[notification.ModuleName].(*notification.Runtime)
	poll(t, "database_unavailable to be held", func() bool { return rt.Held() > 0 })

	proxy.mend()
	poll(t, "/readyz to pass again", func() bool { code, _ := readyz(t, gw); return code == http.StatusOK })
	if up := metricstest.Scrape(t, gw.URL()+"/metrics", "").Value("wharf_database_up", nil); up != 1 {
		t.Fatalf("wharf_database_up after the outage: %v", up)
	}
	poll(t, "the alert to be recorded and resolved", func() bool {
		as, total, err := gw.Notifications.ListAlerts(context.Background(), alert.Filter{Code: alert.DatabaseUnavailable})
		return err == nil && total == 1 && as[0].ResolvedAt != nil
	})
	if _, open, _ := gw.Notifications.ListAlerts(context.Background(), alert.Filter{Severity: alert.SeverityCritical, Unresolved: true}); open != 0 {
		t.Fatalf("%d critical alerts open after recovery, want 0", open)
	}
	poll(t, "the database_unavailable webhook", func() bool { return len(receiver.byCode(t, "database_unavailable")) == 1 })
	if list, err = gw.Services.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		if st.State == services.StateDegraded {
			t.Errorf("%s still reads degraded after recovery", st.Name)
		}
	}
}

// A message that failed raises message_failed; redelivered with success, the alert is
// resolved and leaves the open critical alerts.
func TestRedeliveredMessageResolvesItsAlert(t *testing.T) {
	for name, dbURL := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := startGateway(t, dbURL, nil, nil)
			var refuse atomic.Bool
			refuse.Store(true)
			partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if refuse.Load() {
					w.WriteHeader(http.StatusForbidden)
				}
			}))
			defer partner.Close()
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": "picky", "url": partner.URL + "/in"}, nil)
			h.mustJSON("POST", "/api/v1/services/http-poster/picky/start", map[string]any{}, nil)
			m := h.send("local", "acme", "picky", "invoice.edi", []byte("payload"))
			m = h.waitStatus(m.ID, "error")
			ctx := context.Background()
			open := func() []alert.Alert {
				as, _, err := h.g.Notifications.ListAlerts(ctx, alert.Filter{Code: alert.MessageFailed, Unresolved: true})
				if err != nil {
					t.Fatal(err)
				}
				return as
			}
			poll(t, "the message_failed alert", func() bool { return len(open()) == 1 })
			var listed struct {
				Alerts []alert.Alert `json:"alerts"`
				Total  int           `json:"total"`
			}
			h.mustJSON("GET", "/api/v1/alerts?code=message_failed&unresolved=true", nil, &listed)
			if listed.Total != 1 || listed.Alerts[0].ResolvedAt != nil {
				t.Fatalf("REST open alerts before the redelivery: %+v", listed)
			}
			if code := h.json("GET", "/api/v1/alerts?unresolved=maybe", nil, nil); code != http.StatusBadRequest {
				t.Fatalf("unresolved=maybe: status %d, want 400", code)
			}

			refuse.Store(false)
			h.mustJSON("POST", fmt.Sprintf("/api/v1/messages/%d/deliveries/%d/redeliver", m.ID, m.Deliveries[0].ID), map[string]any{}, nil)
			h.waitStatus(m.ID, "delivered")
			poll(t, "the alert to be resolved", func() bool { return len(open()) == 0 })
			as, total, err := h.g.Notifications.ListAlerts(ctx, alert.Filter{Code: alert.MessageFailed})
			if err != nil || total != 1 || as[0].ResolvedAt == nil || as[0].ResolvedAt.Before(as[0].Time) {
				t.Fatalf("message_failed alerts after the redelivery: %+v, %v", as, err)
			}
			h.mustJSON("GET", "/api/v1/alerts?code=message_failed&unresolved=true", nil, &listed)
			if listed.Total != 0 {
				t.Fatalf("REST open alerts after the redelivery: %+v", listed)
			}
			h.mustJSON("GET", "/api/v1/alerts?code=message_failed", nil, &listed)
			if listed.Total != 1 || listed.Alerts[0].ResolvedAt == nil {
				t.Fatalf("REST alerts after the redelivery: %+v", listed)
			}
		})
	}
}
