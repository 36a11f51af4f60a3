package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/httproute"
	"wharf/internal/metrics"
	"wharf/internal/metrics/metricstest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// fakeStore answers the scrape-time reads from fixed values.
type fakeStore struct {
	instances []persistence.PluginConfig
	orgs      []persistence.Party
	counts    []db.TargetStateCount
	ends      map[string]time.Time
	err       error
}

func (f *fakeStore) CountOpenDeliveries(context.Context) ([]db.TargetStateCount, error) {
	return f.counts, f.err
}

func (f *fakeStore) CertificateExpiryByUse(context.Context) (map[string]time.Time, error) {
	return f.ends, f.err
}

func (f *fakeStore) ListPluginConfigs(context.Context, persistence.PluginType) ([]persistence.PluginConfig, error) {
	return f.instances, f.err
}

func (f *fakeStore) ListParties(_ context.Context, kind persistence.PartyKind, o persistence.ListOptions) ([]persistence.Party, int, error) {
	if kind != persistence.PartyOrganization {
		return nil, 0, errors.New("only organizations are asked for")
	}
	if o.Offset >= len(f.orgs) {
		return nil, len(f.orgs), f.err
	}
	return f.orgs[o.Offset:], len(f.orgs), f.err
}

func serve(t *testing.T, r *metrics.Registry, token string) string {
	t.Helper()
	srv := httptest.NewServer(r.Handler(token))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Status changes are labelled by their source's protocol and their sender's direction,
// resolved at the scrape; transitions by target and states.
func TestChangesAreLabelledAtTheScrape(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &fakeStore{
		instances: []persistence.PluginConfig{{Name: "poller", Type: persistence.PluginFilePoller}, {Name: "as2_in", Type: persistence.PluginAS2Receiver}},
		orgs:      []persistence.Party{{Kind: persistence.PartyOrganization, Name: "local"}},
		counts:    []db.TargetStateCount{{Target: "writer", State: persistence.DeliveryQueued, Count: 7}},
		ends:      map[string]time.Time{"as2_local_profile": now.Add(36 * time.Hour), "unused": now.Add(-24 * time.Hour)},
	}
	r := metrics.New(metrics.Options{Store: st, Now: func() time.Time { return now }, Version: "1.2.3",
		Protocols: map[persistence.PluginType]string{persistence.PluginFilePoller: "file", persistence.PluginAS2Receiver: "as2"}})
	r.Changes(db.Changes{
		Deliveries: []db.DeliveryChange{{Target: "writer", From: persistence.DeliveryQueued, To: persistence.DeliveryDelivering},
			{Target: "writer", From: persistence.DeliveryDelivering, To: persistence.DeliveryDelivered}},
		Messages: []db.StatusChange{{Source: "poller", From: "local", Status: persistence.StatusReceived},
			{Source: "as2_in", From: "acme", Status: persistence.StatusReceived},
			{Source: "as2_in", From: "acme", Status: persistence.StatusDelivered},
			{Source: "gone", From: "acme", Status: persistence.StatusReceived}},
	})
	f := metricstest.Scrape(t, serve(t, r, ""), "")
	for _, tt := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"wharf_messages_total", map[string]string{"protocol": "file", "direction": "outbound", "status": "received"}, 1},
		{"wharf_messages_total", map[string]string{"protocol": "as2", "direction": "inbound", "status": "received"}, 1},
		{"wharf_messages_total", map[string]string{"protocol": "as2", "direction": "inbound", "status": "delivered"}, 1},
		{"wharf_messages_total", map[string]string{"protocol": "unknown", "direction": "inbound", "status": "received"}, 1},
		{"wharf_delivery_transitions_total", map[string]string{"target": "writer", "from": "delivering", "to": "delivered"}, 1},
		{"wharf_deliveries", map[string]string{"target": "writer", "state": "queued"}, 7},
		{"wharf_certificate_expiry_days_min", map[string]string{"use": "as2_local_profile"}, 1.5},
		{"wharf_certificate_expiry_days_min", map[string]string{"use": "unused"}, -1},
		{"wharf_build_info", map[string]string{"version": "1.2.3"}, 1},
	} {
		if got := f.Value(tt.family, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.family, tt.labels, got, tt.want)
		}
	}
	// A second scrape adds nothing twice.
	f = metricstest.Scrape(t, serve(t, r, ""), "")
	if got := f.Value("wharf_messages_total", nil); got != 4 {
		t.Errorf("messages after a second scrape: %v, want 4", got)
	}
}

// While the configuration cannot be read the tally waits; the next scrape counts it.
func TestTallyWaitsForTheConfiguration(t *testing.T) {
	st := &fakeStore{err: errors.New("database down")}
	r := metrics.New(metrics.Options{Store: st, Protocols: map[persistence.PluginType]string{persistence.PluginFilePoller: "file"}})
	r.Changes(db.Changes{Messages: []db.StatusChange{{Source: "poller", From: "local", Status: persistence.StatusReceived}}})
	url := serve(t, r, "")
	if got := metricstest.Scrape(t, url, "").Value("wharf_messages_total", nil); got != 0 {
		t.Fatalf("counted %v while the configuration is out of reach", got)
	}
	st.err = nil
	st.instances = []persistence.PluginConfig{{Name: "poller", Type: persistence.PluginFilePoller}}
	if got := metricstest.Scrape(t, url, "").Value("wharf_messages_total", map[string]string{"protocol": "file"}); got != 1 {
		t.Fatalf("counted %v once the configuration answers, want 1", got)
	}
}

func TestTokenGuardsTheHandler(t *testing.T) {
	r := metrics.New(metrics.Options{})
	url := serve(t, r, "scrape-0123456789abcdef")
	for _, tt := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong-0123456789abcdef", http.StatusUnauthorized},
		{"Bearer scrape-0123456789abcdef", http.StatusOK},
	} {
		req, _ := http.NewRequest("GET", url, nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Authorization %q: %d, want %d", tt.auth, resp.StatusCode, tt.want)
		}
	}
	metricstest.Scrape(t, url, "scrape-0123456789abcdef")
}

// Requests are timed under the pattern that served them, never the path.
func TestInstrumentLabelsByPattern(t *testing.T) {
	r := metrics.New(metrics.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/messages/{id}", func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux.Handle("GET /metrics", r.Handler(""))
	srv := httptest.NewServer(r.Instrument(httproute.Note(mux)))
	defer srv.Close()
	for _, p := range []string{"/api/v1/messages/42", "/api/v1/messages/43", "/no/such/path"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	f := metricstest.Scrape(t, srv.URL+"/metrics", "")
	if got := f.Value("wharf_http_request_duration_seconds", map[string]string{"route": "GET /api/v1/messages/{id}", "code": "418"}); got != 2 {
		t.Errorf("requests under the pattern: %v, want 2", got)
	}
	if got := f.Value("wharf_http_request_duration_seconds", map[string]string{"route": "unmatched", "code": "404"}); got != 1 {
		t.Errorf("requests no pattern served: %v, want 1", got)
	}
	for _, l := range f.LabelValues() {
		if l.Name == "route" && (l.Value == "/api/v1/messages/42" || l.Value == "/no/such/path") {
			t.Errorf("a raw path is a label value: %+v", l)
		}
	}
}

// Two registries in one process count apart: nothing goes to the global default.
func TestRegistriesAreIndependent(t *testing.T) {
	a, b := metrics.New(metrics.Options{}), metrics.New(metrics.Options{})
	a.Woken("writer")
	a.AttemptDone("writer", "delivered", 30*time.Millisecond)
	a.Swept(delivery.SweepReport{At: time.Unix(1700000000, 0), ExpiredLeases: 2})
	fa, fb := metricstest.Scrape(t, serve(t, a, ""), ""), metricstest.Scrape(t, serve(t, b, ""), "")
	if fa.Value("wharf_worker_wakeups_total", map[string]string{"target": "writer"}) != 1 ||
		fa.Value("wharf_delivery_attempt_duration_seconds", map[string]string{"target": "writer", "outcome": "delivered"}) != 1 ||
		fa.Value("wharf_sweep_rows", map[string]string{"kind": "expired_leases"}) != 2 ||
		fa.Value("wharf_sweep_last_run_timestamp_seconds", nil) != 1700000000 {
		t.Errorf("the first registry lacks what it was told")
	}
	if fb.Value("wharf_worker_wakeups_total", nil) != 0 {
		t.Errorf("the second registry counted the first's wake-ups")
	}
}

func TestRetentionCountsWhatWasPruned(t *testing.T) {
	r := metrics.New(metrics.Options{})
	r.Pruned("payloads", 500)
	r.Pruned("payloads", 20)
	r.Pruned("history_months", 1)
	f := metricstest.Scrape(t, serve(t, r, ""), "")
	if got := f.Value("wharf_retention_pruned_total", map[string]string{"kind": "payloads"}); got != 520 {
		t.Errorf("payloads pruned = %v, want 520", got)
	}
	if got := f.Value("wharf_retention_pruned_total", map[string]string{"kind": "history_months"}); got != 1 {
		t.Errorf("history months pruned = %v, want 1", got)
	}
}
