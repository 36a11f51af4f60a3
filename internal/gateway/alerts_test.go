package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/logging/logtest"
	"wharf/internal/notification"
	"wharf/internal/stdwebhook"
)

// hook is a webhook receiver that keeps what it was sent.
type hook struct {
	mu   sync.Mutex
	reqs []hookReq
}

type hookReq struct {
	header http.Header
	body   []byte
}

func (k *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	k.mu.Lock()
	k.reqs = append(k.reqs, hookReq{r.Header.Clone(), b})
	k.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// byCode returns the requests whose generic body has the code.
func (k *hook) byCode(t *testing.T, code string) []hookReq {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []hookReq
	for _, r := range k.reqs {
		var v struct{ Code string }
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatalf("webhook body is not JSON: %s", r.body)
		}
		if v.Code == code {
			out = append(out, r)
		}
	}
	return out
}

// startLogged runs a gateway with every log line, down to debug, kept in logs as well
// as logged to the test, and the default settings.
func startLogged(t *testing.T, dbURL string, logs io.Writer) *harness {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, gatewaytest.LogWriter(t)), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return startGateway(t, dbURL, log, nil)
}

// failingPoster runs the http-poster picky for the partner acme, whose URL and header
// hold canaries and whose receiver refuses every request with 403.
func (h *harness) failingPoster() {
	h.t.Helper()
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusForbidden)
	}))
	h.t.Cleanup(partner.Close)
	h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
	h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": "picky",
		"url": partner.URL + "/in?token=CANARY-poster-url", "secret_headers": map[string]string{"Authorization": "Bearer CANARY-poster-header"}}, nil)
	h.mustJSON("POST", "/api/v1/services/http-poster/picky/start", map[string]any{}, nil)
}

// A delivery that fails makes exactly one message_failed alert, which the webhook
// receiver gets in the generic format with a valid signature; the test button reaches it
// too; and no secret of the failing target or of the notifier shows in an alert, a
// notification row, a response or a log line.
func TestFailedDeliveryNotifies(t *testing.T) {
	const secret = "CANARY-signing-secret-0123456789"
	canaries := []string{"CANARY"}
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			logs := &logtest.Buffer{}
			h := startLogged(t, url, logs)
			receiver := &hook{}
			hookSrv := httptest.NewServer(receiver)
			defer hookSrv.Close()
			h.failingPoster()
			h.mustJSON("POST", "/api/v1/plugins/configs/notification-webhook", map[string]any{"name": "ops",
				"url": hookSrv.URL + "/hook?key=CANARY-hook-url", "format": "generic", "signing_secret": secret,
				"headers": map[string]string{"Authorization": "Bearer CANARY-hook-header"}}, nil)
			h.mustJSON("POST", "/api/v1/services/notification-webhook/ops/start", map[string]any{}, nil)

			m := h.send("local", "acme", "picky", "invoice.edi", []byte("CANARY-payload"))
			h.waitStatus(m.ID, "error")

			var got []hookReq
			poll(t, "the message_failed webhook", func() bool {
				got = receiver.byCode(t, "message_failed")
				return len(got) > 0
			})
			var list struct {
				Notifications []notification.Notification `json:"notifications"`
			}
			poll(t, "the notification row to be delivered", func() bool {
				h.mustJSON("GET", "/api/v1/notifications?code=message_failed", nil, &list)
				return len(list.Notifications) == 1 && list.Notifications[0].State == notification.StateDelivered
			})
			if got = receiver.byCode(t, "message_failed"); len(got) != 1 {
				t.Fatalf("the receiver got %d message_failed webhooks, want 1", len(got))
			}
			if err := stdwebhook.Verify(got[0].header, []string{secret}, got[0].body, time.Now()); err != nil {
				t.Fatalf("signature: %v", err)
			}
			var body struct {
				Version string `json:"version"`
				Subject struct{ Kind, ID string }
				Link    string `json:"link"`
			}
			if err := json.Unmarshal(got[0].body, &body); err != nil {
				t.Fatal(err)
			}
			if body.Version != notification.GenericVersion || body.Subject.Kind != "message" || body.Subject.ID != fmt.Sprint(m.ID) ||
				!strings.HasSuffix(body.Link, fmt.Sprintf("/ui/messages/%d", m.ID)) {
				t.Fatalf("webhook body %s", got[0].body)
			}
			if a := got[0].header.Get("Authorization"); a != "Bearer CANARY-hook-header" {
				t.Fatalf("configured header not sent: %q", a)
			}
			var alerts struct {
				Alerts []struct{ Code string } `json:"alerts"`
			}
			h.mustJSON("GET", "/api/v1/alerts?code=message_failed", nil, &alerts)
			if len(alerts.Alerts) != 1 {
				t.Fatalf("%d message_failed alerts recorded, want 1", len(alerts.Alerts))
			}
			// What the web UI's dashboard card reads.
			if h.g.Notifications == nil {
				t.Fatal("the gateway offers no notification log")
			}
			crit, _, err := h.g.Notifications.ListAlerts(context.Background(), alert.Filter{Severity: alert.SeverityCritical, Limit: 5})
			if err != nil || len(crit) != 1 || crit[0].Subject.ID != fmt.Sprint(m.ID) {
				t.Fatalf("recent critical alerts: %+v, %v", crit, err)
			}

			// The test button: the alert goes over the bus to the instance.
			var tested struct {
				AlertID string `json:"alert_id"`
			}
			if code := h.json("POST", "/api/v1/notifications/test", map[string]string{"instance": "ops"}, &tested); code != http.StatusAccepted {
				t.Fatalf("test: status %d", code)
			}
			poll(t, "the test webhook", func() bool { return len(receiver.byCode(t, "notification_test")) == 1 })
			if code := h.json("POST", "/api/v1/notifications/test", map[string]string{"instance": "picky"}, nil); code != http.StatusBadRequest {
				t.Fatalf("test of an http-poster: status %d, want 400", code)
			}
			if code := h.json("POST", "/api/v1/notifications/test", map[string]string{"instance": "nobody"}, nil); code != http.StatusNotFound {
				t.Fatalf("test of a missing instance: status %d, want 404", code)
			}

			// No canary anywhere an operator or a receiver looks.
			var seen []string
			for _, path := range []string{"/api/v1/notifications", "/api/v1/alerts", "/api/v1/plugins/configs/notification-webhook/ops"} {
				var raw json.RawMessage
				h.mustJSON("GET", path, nil, &raw)
				seen = append(seen, path+": "+string(raw))
			}
			receiver.mu.Lock()
			for _, r := range receiver.reqs {
				seen = append(seen, "webhook: "+string(r.body))
			}
			receiver.mu.Unlock()
			seen = append(seen, "logs: "+logs.String())
			for _, s := range seen {
				for _, c := range canaries {
					if strings.Contains(s, c) {
						t.Errorf("secret canary shows: %.300s", s[strings.Index(s, c)-min(strings.Index(s, c), 200):])
					}
				}
			}
		})
	}
}

// poll waits for cond with a deadline, or fails the test.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}
