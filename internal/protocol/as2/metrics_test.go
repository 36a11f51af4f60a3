package as2_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"wharf/internal/metrics/metricstest"
)

// Files dropped in A's outbox go to B over AS2 and land in B's inbox; /metrics of both
// gateways, read with the Prometheus text parser, counts that traffic exactly: messages
// by protocol, direction and status, delivery transitions, attempts, inbound requests
// and their refusals. No label value names a party, a message id or an address, and the
// AS2 listener does not serve /metrics.
func TestMetricsCountTheTraffic(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		a := startPeer(t, "WHARF-A", url)
		b := startPeer(t, "WHARF B", "")
		connect(t, a, b)
		// The connection check has posted to B already.
		before := metricstest.Scrape(t, b.gw.URL()+"/metrics", "").Value("wharf_inbound_requests_total", nil)
		const n = 5
		for i := range n {
			dir := filepath.Join(a.data, "outbox", "b")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("order-%d.edi", i)), []byte(fmt.Sprintf("UNH+%d'", i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		waitMetric(t, a, "A's deliveries settled by their MDN", "wharf_messages_total",
			map[string]string{"protocol": "file", "direction": "outbound", "status": "delivered"}, n)
		waitMetric(t, b, "B's files written", "wharf_messages_total",
			map[string]string{"protocol": "as2", "direction": "inbound", "status": "delivered"}, n)
		for i := range n {
			if _, err := os.Stat(filepath.Join(b.data, "inbox", "a", fmt.Sprintf("order-%d.edi", i))); err != nil {
				t.Fatalf("B's inbox: %v", err)
			}
		}

		// A stranger's request is refused before anything is read.
		req, _ := http.NewRequest("POST", b.as2+"/as2", strings.NewReader("x"))
		req.Header.Set("AS2-From", "STRANGER")
		req.Header.Set("AS2-To", b.name)
		req.Header.Set("AS2-Version", "1.2")
		req.Header.Set("Message-ID", "<stranger-1@example.com>")
		req.Header.Set("Content-Type", "application/edi-x12")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("stranger's request: %d, want 403", resp.StatusCode)
		}

		// A record's page is timed under its pattern, not its path.
		if status, _ := a.gw.API("GET", "/api/v1/messages/1", "", nil); status != http.StatusOK {
			t.Fatalf("message 1 of A: %d", status)
		}
		fa := metricstest.Scrape(t, a.gw.URL()+"/metrics", "")
		fb := metricstest.Scrape(t, b.gw.URL()+"/metrics", "")
		for _, tt := range []struct {
			who    string
			f      metricstest.Families
			family string
			labels map[string]string
			want   float64
		}{
			{"A", fa, "wharf_messages_total", map[string]string{"protocol": "file", "direction": "outbound", "status": "received"}, n},
			{"A", fa, "wharf_messages_total", map[string]string{"direction": "inbound"}, 0},
			{"A", fa, "wharf_delivery_transitions_total", map[string]string{"target": "as2_sender_default", "from": "queued", "to": "delivering"}, n},
			{"A", fa, "wharf_delivery_transitions_total", map[string]string{"target": "as2_sender_default", "to": "delivered"}, n},
			{"A", fa, "wharf_delivery_transitions_total", map[string]string{"to": "failed"}, 0},
			{"A", fa, "wharf_delivery_attempt_duration_seconds", map[string]string{"target": "as2_sender_default", "outcome": "delivered"}, n},
			{"A", fa, "wharf_deliveries", nil, 0},
			{"A", fa, "wharf_database_up", nil, 1},
			{"A", fa, "wharf_bus_up", nil, 1},
			{"A", fa, "wharf_alerts_dropped_total", nil, 0},
			{"B", fb, "wharf_messages_total", map[string]string{"protocol": "as2", "direction": "inbound", "status": "received"}, n},
			{"B", fb, "wharf_delivery_transitions_total", map[string]string{"target": "file_writer_default", "to": "delivered"}, n},
			{"B", fb, "wharf_inbound_requests_total", map[string]string{"protocol": "as2", "instance": "as2_receiver_default"}, before + n + 1},
			{"B", fb, "wharf_inbound_requests_in_flight", map[string]string{"protocol": "as2", "instance": "as2_receiver_default"}, 0},
			{"B", fb, "wharf_inbound_requests_refused_total", map[string]string{"protocol": "as2", "instance": "as2_receiver_default", "reason": "unknown_party"}, 1},
			{"B", fb, "wharf_inbound_requests_refused_total", nil, 1},
		} {
			if got := tt.f.Value(tt.family, tt.labels); got != tt.want {
				t.Errorf("%s: %s%v = %v, want %v", tt.who, tt.family, tt.labels, got, tt.want)
			}
		}
		// Families that exist once the gateway ran: wake-ups, the sweep, the REST routes
		// the test called, the certificates of the AS2 profiles.
		for _, tt := range []struct {
			family string
			labels map[string]string
		}{
			{"wharf_worker_wakeups_total", map[string]string{"target": "as2_sender_default"}},
			{"wharf_sweep_passes_total", nil},
			{"wharf_sweep_last_run_timestamp_seconds", nil},
			{"wharf_http_request_duration_seconds", map[string]string{"route": "POST /api/v1/partners", "code": "201"}},
			{"wharf_http_request_duration_seconds", map[string]string{"route": "GET /api/v1/messages/{id}", "code": "200"}},
			{"wharf_certificate_expiry_days_min", map[string]string{"use": "as2_local_profile"}},
			{"wharf_certificate_expiry_days_min", map[string]string{"use": "as2_remote_profile"}},
		} {
			if got := fa.Value(tt.family, tt.labels); got <= 0 {
				t.Errorf("A: %s%v = %v, want more than 0", tt.family, tt.labels, got)
			}
		}
		for _, fam := range []string{"wharf_delivery_claims_lost_total", "wharf_delivery_lease_expiries_total"} {
			if got := fa.Value(fam, nil) + fb.Value(fam, nil); got != 0 {
				t.Errorf("%s = %v in a run without a lost worker", fam, got)
			}
		}

		checkLabelsBounded(t, fa, fb)
		resp, err = http.Get(b.as2 + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the AS2 listener serves /metrics to partners")
		}
	})
}

// checkLabelsBounded fails for a label value that names a party, an AS2 id, a message
// id, an address or a raw path.
func checkLabelsBounded(t *testing.T, fs ...metricstest.Families) {
	t.Helper()
	forbidden := map[string]bool{"a": true, "b": true, "local": true, "WHARF-A": true, "WHARF B": true, "STRANGER": true}
	for _, f := range fs {
		for _, l := range f.LabelValues() {
			_, numErr := strconv.ParseInt(l.Value, 10, 64)
			switch {
			case forbidden[l.Value]:
				t.Errorf("%s{%s=%q} names a party", l.Family, l.Name, l.Value)
			case numErr == nil && l.Name != "code":
				t.Errorf("%s{%s=%q} is a numeric id", l.Family, l.Name, l.Value)
			case strings.Contains(l.Value, "127.0.0.1") || strings.Contains(l.Value, "://") || strings.Contains(l.Value, "@"):
				t.Errorf("%s{%s=%q} names an address", l.Family, l.Name, l.Value)
			case l.Name == "route" && rawPath(l.Value):
				t.Errorf("%s{%s=%q} is a raw path", l.Family, l.Name, l.Value)
			}
		}
	}
}

// rawPath tells whether a route label has a path segment that is an id rather than a
// pattern's wildcard.
func rawPath(route string) bool {
	for _, seg := range strings.Split(route, "/") {
		if _, err := strconv.ParseInt(seg, 10, 64); err == nil {
			return true
		}
	}
	return false
}

// waitMetric polls p's /metrics until the family's samples with labels sum to want.
func waitMetric(t *testing.T, p *peer, what, family string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := metricstest.Scrape(t, p.gw.URL()+"/metrics", "").Value(family, labels)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s%v = %v, want %v", what, family, labels, got, want)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}
