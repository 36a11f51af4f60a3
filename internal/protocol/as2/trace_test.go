package as2_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/stdwebhook"

	_ "wharf/internal/protocol/httppost"
)

// traceView is what GET /api/v1/trace answers, as far as these tests read it.
type traceView struct {
	Truncated bool `json:"truncated"`
	Messages  []struct {
		ID            int64  `json:"id"`
		Status        string `json:"status"`
		CorrelationID string `json:"correlation_id"`
		OriginEventID string `json:"origin_event_id"`
		Deliveries    []struct {
			ID            int64  `json:"id"`
			Target        string `json:"target"`
			State         string `json:"state"`
			Attempts      int    `json:"attempts"`
			CorrelationID string `json:"correlation_id"`
			Downstream    *struct {
				Status string `json:"status"`
			} `json:"downstream"`
		} `json:"deliveries"`
		History []struct {
			DeliveryID    *int64     `json:"delivery_id"`
			Kind          string     `json:"kind"`
			FromState     string     `json:"from_state"`
			ToState       string     `json:"to_state"`
			Actor         string     `json:"actor"`
			CorrelationID string     `json:"correlation_id"`
			ReportedAt    *time.Time `json:"reported_at"`
		} `json:"history"`
	} `json:"messages"`
}

// flakyERP is an in-house system that answers 503 to the first document and takes the
// rest for later processing (202 with its job id), keeping the correlation header of each.
type flakyERP struct {
	mu   sync.Mutex
	seen []string
}

func (e *flakyERP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, r.Header.Get("X-Wharf-Correlation-Id"))
	if len(e.seen) == 1 {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("X-Job-Id", "job-4711")
	w.WriteHeader(http.StatusAccepted)
}

// sendCallback posts one status callback to the gateway's callback endpoint of target,
// signed with secret per Standard Webhooks, and requires it taken (202).
func (p *peer) sendCallback(target, secret, id, body string) {
	p.t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.g.Addr()+"/api/v1/callbacks/"+target, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	key, err := stdwebhook.Key(secret)
	if err != nil {
		p.t.Fatal(err)
	}
	stdwebhook.Sign(req.Header, key, id, time.Now(), []byte(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		data, _ := io.ReadAll(resp.Body)
		p.t.Fatalf("callback %s: %d %s", id, resp.StatusCode, data)
	}
}

// TestTraceOfAMessageToTwoTargets is the trace check: a document sent with an origin
// event id goes to a partner over AS2 (answered by an asynchronous MDN) and to an
// in-house system over HTTP (refused once, then taken for processing), which reports
// back with two signed status callbacks (received, then processed). One trace call by
// the origin id returns the message with its final status, both deliveries with theirs,
// the retry, the MDN and both callbacks with the in-house system's own times.
func TestTraceOfAMessageToTwoTargets(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, dbURL string) {
		a, b := startPeer(t, "WHARF-A", dbURL), startPeer(t, "WHARF-B", "")
		connect(t, a, b)
		a.changeRemote("b", map[string]any{"mdn_mode": "async"})
		erp := &flakyERP{}
		srv := httptest.NewServer(erp)
		t.Cleanup(srv.Close)
		zero := 0.0
		a.json("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": "erp_poster", "enabled": true,
			"url": srv.URL + "/in", "retry": map[string]any{"strategy": "fixed", "base": "1s", "max_retries": 3, "jitter": zero},
			"handoff": map[string]any{"statuses": []int{202}, "reference": map[string]any{"header": "X-Job-Id"}, "deadline": "1h"}}, nil)
		var created struct {
			Secret string `json:"secret"`
		}
		a.json("POST", "/api/v1/callbacks/erp_poster/secrets", map[string]any{}, &created)
		a.json("POST", "/api/v1/services/http-poster/erp_poster/start", map[string]any{}, nil)
		a.json("POST", "/api/v1/routes", map[string]any{"source": "file_poller_default", "from": "local", "to": "b", "target": "erp_poster"}, nil)

		a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "source": "file_poller_default",
			"correlation_id": "PO-4711", "origin_event_id": "erp-event-4711"}, "order-4711.edi", []byte("UNH+1+ORDERS:D:96A:UN'\r\n"), nil)

		var tr traceView
		path := "/api/v1/trace?origin_event_id=" + url.QueryEscape("erp-event-4711")
		poll(t, func() bool {
			a.do("GET", path, "", nil, &tr)
			if len(tr.Messages) != 1 {
				return false
			}
			for _, d := range tr.Messages[0].Deliveries {
				if d.Target == "erp_poster" && d.State == "awaiting_ack" {
					return true
				}
			}
			return false
		})
		// The in-house system reports with its own clock: received, then processed.
		a.sendCallback("erp_poster", created.Secret, "cb-received",
			`{"external_ref":"job-4711","status":"received","timestamp":"2026-03-01T10:00:00Z"}`)
		a.sendCallback("erp_poster", created.Secret, "cb-processed",
			`{"external_ref":"job-4711","status":"processed","timestamp":"2026-03-01T10:05:00Z"}`)
		poll(t, func() bool {
			a.do("GET", path, "", nil, &tr)
			return len(tr.Messages) == 1 && tr.Messages[0].Status == "delivered"
		})
		if len(tr.Messages) != 1 || tr.Truncated {
			t.Fatalf("trace %+v, want one message", tr)
		}
		m := tr.Messages[0]
		if m.Status != "delivered" || m.CorrelationID != "PO-4711" || m.OriginEventID != "erp-event-4711" {
			t.Fatalf("message %d: status %s, correlation %q, origin %q", m.ID, m.Status, m.CorrelationID, m.OriginEventID)
		}

		// Each target's final state, and the lines its timeline must hold, in order.
		want := map[string]struct {
			state    string
			attempts int
			lines    []string
		}{
			"erp_poster": {"delivered", 2, []string{"delivery_changed:queued>delivering", "delivery_changed:delivering>retrying",
				"delivery_changed:retrying>delivering", "delivery_changed:delivering>awaiting_ack",
				"downstream_status:>received", "downstream_status:>processed", "delivery_changed:awaiting_ack>delivered"}},
			"as2_sender_default": {"delivered", 1, []string{"delivery_changed:queued>delivering", "delivery_changed:delivering>awaiting_ack",
				"downstream_status:>processed", "delivery_changed:awaiting_ack>delivered"}},
		}
		if len(m.Deliveries) != len(want) {
			t.Fatalf("%d deliveries, want %d", len(m.Deliveries), len(want))
		}
		for _, d := range m.Deliveries {
			w, ok := want[d.Target]
			if !ok || d.State != w.state || d.Attempts != w.attempts || d.CorrelationID != "PO-4711" {
				t.Errorf("delivery %d to %s: %s after %d attempts (correlation %q), want %+v", d.ID, d.Target, d.State, d.Attempts, d.CorrelationID, w)
				continue
			}
			var lines []string
			for _, h := range m.History {
				if h.DeliveryID != nil && *h.DeliveryID == d.ID {
					lines = append(lines, h.Kind+":"+h.FromState+">"+h.ToState)
				}
			}
			if !isSubsequence(w.lines, lines) {
				t.Errorf("delivery to %s has lines %v, want %v among them in order", d.Target, lines, w.lines)
			}
		}
		reported := map[string]string{}
		for _, h := range m.History {
			if h.Kind == "downstream_status" && h.ReportedAt != nil {
				reported[h.Actor+" "+h.ToState] = h.ReportedAt.UTC().Format(time.RFC3339)
			}
		}
		for line, at := range map[string]string{"callback:erp_poster received": "2026-03-01T10:00:00Z", "callback:erp_poster processed": "2026-03-01T10:05:00Z"} {
			if reported[line] != at {
				t.Errorf("downstream line %q reported at %q, want %s (all: %v)", line, reported[line], at, reported)
			}
		}
		for _, d := range m.Deliveries {
			want := map[string]string{"erp_poster": "processed", "as2_sender_default": "processed"}[d.Target]
			if d.Downstream == nil || d.Downstream.Status != want {
				t.Errorf("delivery to %s: downstream %+v, want %s", d.Target, d.Downstream, want)
			}
		}
		for _, h := range m.History {
			if h.CorrelationID != "PO-4711" || h.Actor == "" {
				t.Errorf("history line %+v lacks the correlation id or the actor", h)
			}
		}
		erp.mu.Lock()
		seen := slices.Clone(erp.seen)
		erp.mu.Unlock()
		if len(seen) != 2 || seen[0] != "PO-4711" || seen[1] != "PO-4711" {
			t.Errorf("the in-house system saw correlation ids %v, want PO-4711 twice", seen)
		}
	})
}

// isSubsequence reports whether want appears in got in order, other lines between.
func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestNoMessageWithoutCorrelation runs every source — a REST send, the file poller with
// and without a sidecar, the AS2 receiver taking a message and refusing one — and the
// operator's resends (redispatch, redeliver), then asks both gateways' databases for a
// message, delivery or history line without a correlation id or an origin event id.
func TestNoMessageWithoutCorrelation(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, dbURL string) {
		a, b := startPeer(t, "WHARF-A", dbURL), startPeer(t, "WHARF-B", "")
		connect(t, a, b)

		// REST send, to the partner over AS2: B's receiver stores it.
		var sent messageView
		a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"},
			"sent.edi", []byte("sent by hand\r\n"), &sent)
		// The file poller, with a sidecar naming the ids and without one.
		dir := filepath.Join(a.data, "outbox", "b")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{"polled.edi": "polled\r\n", "sidecar.edi": "with a sidecar\r\n",
			"sidecar.edi.meta.json": `{"correlation_id":"PO-FILE","origin_event_id":"erp-file-1"}`} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// A message B refuses: unsigned, where B requires signatures.
		r, err := mime.Build([]byte("unsigned\r\n"), "unsigned.edi", mime.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", b.as2+"/as2", bytes.NewReader(r.Body))
		for k, v := range r.Header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", r.ContentType)
		req.Header.Set("AS2-Version", "1.2")
		req.Header.Set("AS2-From", a.name)
		req.Header.Set("AS2-To", b.name)
		req.Header.Set("Message-ID", "<unsigned-1@wharf-a.example>")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		count := func(p *peer, q string) int {
			var n int
			err := p.gw.Store.ModuleSQL().Read(context.Background(), func(tx module.Tx) error { return tx.QueryRow(context.Background(), q).Scan(&n) })
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return n
		}
		stored := func(delivered, taken, refused int) bool {
			return count(a, `SELECT COUNT(*) FROM messages WHERE status = 'delivered'`) == delivered &&
				count(b, `SELECT COUNT(*) FROM messages WHERE refusal = 'none'`) == taken &&
				count(b, `SELECT COUNT(*) FROM messages WHERE status = 'refused'`) == refused
		}
		if poll(t, func() bool { return stored(3, 3, 1) }); !stored(3, 3, 1) {
			t.Fatal("A did not deliver its three messages, or B did not take three and refuse one")
		}
		if n := count(a, `SELECT COUNT(*) FROM messages WHERE correlation_id = 'PO-FILE' AND origin_event_id = 'erp-file-1'`); n != 1 {
			t.Errorf("%d messages carry the sidecar's ids, want 1", n)
		}
		// The operator's resends.
		a.json("POST", fmt.Sprintf("/api/v1/messages/%d/redispatch", sent.ID), map[string]any{}, nil)
		var detail struct {
			Deliveries []struct {
				ID int64 `json:"id"`
			} `json:"deliveries"`
		}
		a.do("GET", fmt.Sprintf("/api/v1/messages/%d", sent.ID), "", nil, &detail)
		a.json("POST", fmt.Sprintf("/api/v1/messages/%d/deliveries/%d/redeliver", sent.ID, detail.Deliveries[0].ID),
			map[string]any{"resend": "new_message"}, nil)
		if poll(t, func() bool { return stored(3, 4, 1) }); !stored(3, 4, 1) {
			t.Fatal("the redelivery as a new message did not reach B")
		}

		for _, p := range []*peer{a, b} {
			for _, table := range []string{"messages", "deliveries", "message_history"} {
				if n := count(p, `SELECT COUNT(*) FROM `+table); n == 0 {
					t.Errorf("%s has no %s rows: the sources did not run", p.name, table)
				}
				if n := count(p, `SELECT COUNT(*) FROM `+table+` WHERE correlation_id = '' OR origin_event_id = ''`); n != 0 {
					t.Errorf("%s has %d %s rows without a correlation id or an origin event id", p.name, n, table)
				}
			}
		}
	})
}
