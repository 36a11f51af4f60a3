package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/bus"
	"wharf/internal/gateway"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"

	_ "wharf/internal/protocol/file"
	_ "wharf/internal/protocol/httppost"
)

// harness is a running standalone gateway with an API token.
type harness struct {
	t    *testing.T
	g    *gateway.Gateway
	gw   *gatewaytest.Gateway
	data string
}

// start runs a gateway on dbURL (SQLite in a temporary data directory when empty) with
// warnings logged to the test, and sweeps and wake-ups fast, so stalls and retries show
// within a test's patience.
func start(t *testing.T, dbURL string) *harness {
	t.Helper()
	return startGateway(t, dbURL, nil, map[string]string{"sweep_interval": "100ms", "wakeup_backoff": "1s", "max_dispatches": "1"})
}

// startGateway runs a gateway on dbURL with the settings put before it starts.
func startGateway(t *testing.T, dbURL string, log *slog.Logger, settings map[string]string) *harness {
	t.Helper()
	gw := gatewaytest.Start(t, gatewaytest.Options{DBURL: dbURL, Log: log, Settings: settings})
	return &harness{t: t, g: gw.Gateway, gw: gw, data: gw.DataDir}
}

// do calls the REST API and decodes a 2xx answer into out.
func (h *harness) do(method, path, contentType string, body io.Reader, out any) int {
	h.t.Helper()
	status, data := h.gw.API(method, path, contentType, body)
	if out != nil && status/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	if status/100 != 2 {
		h.t.Logf("%s %s: %d %s", method, path, status, data)
	}
	return status
}

func (h *harness) json(method, path string, in, out any) int {
	h.t.Helper()
	b, _ := json.Marshal(in)
	return h.do(method, path, "application/json", bytes.NewReader(b), out)
}

func (h *harness) mustJSON(method, path string, in, out any) {
	h.t.Helper()
	if code := h.json(method, path, in, out); code/100 != 2 {
		h.t.Fatalf("%s %s: status %d", method, path, code)
	}
}

// send posts a document by hand to a chosen target.
func (h *harness) send(from, to, target, name string, body []byte) message {
	h.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("from", from)
	_ = mw.WriteField("to", to)
	_ = mw.WriteField("target", target)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(body)
	_ = mw.Close()
	var m message
	if code := h.do("POST", "/api/v1/messages", mw.FormDataContentType(), &buf, &m); code != http.StatusCreated {
		h.t.Fatalf("send: status %d", code)
	}
	return m
}

type message struct {
	ID         int64  `json:"id"`
	Status     string `json:"status"`
	Deliveries []struct {
		ID        int64  `json:"id"`
		State     string `json:"state"`
		Attempts  int    `json:"attempts"`
		LastError string `json:"last_error"`
	} `json:"deliveries"`
	History []struct {
		Kind    string `json:"kind"`
		ToState string `json:"to_state"`
		Reason  string `json:"reason"`
	} `json:"history"`
}

// waitStatus polls the message until it has the status, or fails the test.
func (h *harness) waitStatus(id int64, want string) message {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var m message
	for {
		h.json("GET", fmt.Sprintf("/api/v1/messages/%d", id), nil, &m)
		if m.Status == want {
			return m
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("message %d is %s, not %s, after 30s: %+v", id, m.Status, want, m)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}

// checkInvariant holds every stored status equal to the derivation from its deliveries.
func (h *harness) checkInvariant() {
	h.t.Helper()
	ctx := context.Background()
	msgs, _, err := h.g.Store.ListMessages(ctx, persistence.MessageFilter{ListOptions: persistence.ListOptions{Limit: 1000}})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range msgs {
		ds, err := h.g.Store.ListDeliveries(ctx, m.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		states := make([]persistence.DeliveryState, len(ds))
		for i, d := range ds {
			states[i] = d.State
		}
		if want := persistence.DeriveStatus(m.Stage, m.Refusal, states); m.Status != want {
			h.t.Errorf("message %d: stored status %s, derived %s", m.ID, m.Status, want)
		}
	}
}

// databases names each variant's database; the PostgreSQL one is made, or skipped, in
// its subtest.
func databases(*testing.T) map[string]string { return dbtest.URLs() }

// TestFileToFile is the README's walk-through: a partner, a route, a file in the outbox,
// and the same bytes in the inbox with the message delivered.
func TestFileToFile(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme", "display_name": "ACME Corp"}, nil)
			h.mustJSON("POST", "/api/v1/routes", map[string]any{"source": "file_poller_default", "from": "*", "to": "acme", "target": "file_writer_default"}, nil)
			doc := []byte("UNA:+.? '\nUNB+UNOC:3+LOCAL+ACME'\n")
			dir := filepath.Join(h.data, "outbox", "acme")
			if err := os.MkdirAll(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "order-1.edi"), doc, 0o640); err != nil {
				t.Fatal(err)
			}
			var list struct {
				Messages []message `json:"messages"`
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(list.Messages) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the file was not taken within 30s")
				}
				time.Sleep(20 * time.Millisecond) // polling interval
				h.json("GET", "/api/v1/messages", nil, &list)
			}
			h.waitStatus(list.Messages[0].ID, "delivered")
			got, err := os.ReadFile(filepath.Join(h.data, "inbox", "local", "order-1.edi"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, doc) {
				t.Errorf("inbox holds %q, want %q", got, doc)
			}
			if _, err := os.Stat(filepath.Join(dir, "order-1.edi")); !os.IsNotExist(err) {
				t.Errorf("the file is still in the outbox: %v", err)
			}
			h.checkInvariant()
		})
	}
}

// TestHTTPPosterOutcomes: 503 then 200 is delivered after a retry, 400 fails with the
// reason in history, and a target nobody runs is stalled.
func TestHTTPPosterOutcomes(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			var flaky atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				switch {
				case r.URL.Path == "/bad":
					w.WriteHeader(http.StatusBadRequest)
				case flaky.Add(1) == 1:
					w.WriteHeader(http.StatusServiceUnavailable)
				default:
					w.WriteHeader(http.StatusOK)
				}
			}))
			defer srv.Close()
			retry := map[string]any{"strategy": "fixed", "base": "100ms", "max_retries": 3}
			for _, p := range []struct {
				name, path string
				enabled    bool
			}{{"flaky", "/ok", true}, {"picky", "/bad", true}, {"ghost", "/ok", false}} {
				h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": p.name, "url": srv.URL + p.path, "retry": retry, "enabled": p.enabled}, nil)
				if p.enabled {
					h.mustJSON("POST", "/api/v1/services/http-poster/"+p.name+"/start", map[string]any{}, nil)
				}
			}

			m := h.send("local", "acme", "flaky", "a.edi", []byte("first"))
			got := h.waitStatus(m.ID, "delivered")
			if len(got.Deliveries) != 1 || got.Deliveries[0].Attempts != 2 {
				t.Errorf("503 then 200: deliveries %+v, want one with 2 attempts", got.Deliveries)
			}
			if !hasHistory(got, "retrying") {
				t.Errorf("503 then 200: no retrying step in history %+v", got.History)
			}

			m = h.send("local", "acme", "picky", "b.edi", []byte("second"))
			got = h.waitStatus(m.ID, "error")
			if got.Deliveries[0].State != "failed" || !strings.Contains(got.Deliveries[0].LastError, "400") {
				t.Errorf("400: delivery %+v, want failed naming 400", got.Deliveries[0])
			}
			if !hasReason(got, "400") {
				t.Errorf("400: history %+v does not give the reason", got.History)
			}

			m = h.send("local", "acme", "ghost", "c.edi", []byte("third"))
			got = h.waitStatus(m.ID, "stalled")
			if got.Deliveries[0].State != "stalled" {
				t.Errorf("unclaimed: delivery %+v, want stalled", got.Deliveries[0])
			}
			h.checkInvariant()
		})
	}
}

func hasHistory(m message, toState string) bool {
	for _, e := range m.History {
		if e.ToState == toState {
			return true
		}
	}
	return false
}

func hasReason(m message, s string) bool {
	for _, e := range m.History {
		if strings.Contains(e.Reason, s) {
			return true
		}
	}
	return false
}

// TestWebUIMounted checks that the web UI shares the API's listener: the root leads to it,
// its pages ask for a session, and the session key was made on first start.
func TestWebUIMounted(t *testing.T) {
	h := start(t, "")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ path, location string }{
		{"/", "/ui/"},
		{"/ui/", "/ui/sign-in?next=%2Fui%2F"},
	} {
		resp, err := client.Get("http://" + h.g.Addr() + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != tc.location {
			t.Errorf("GET %s = %d to %q, want 303 to %q", tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.location)
		}
	}
	resp, err := client.Get("http://" + h.g.Addr() + "/ui/sign-in")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("sign-in page = %d with CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	if fi, err := os.Stat(filepath.Join(h.data, "session.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("session key file: %v, %v", fi, err)
	}
}

// TestMessageEventsOnBus: each commit that writes a message's history is announced on
// the bus, which the web UI's live pages follow; the logs page's ring gets the process's
// records.
func TestMessageEventsOnBus(t *testing.T) {
	h := start(t, "")
	seen := make(chan string, 100)
	sub, err := h.g.Bus.Subscribe(bus.AllMessageEventsSubject, func(subject string, _ []byte) {
		select {
		case seen <- subject:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
	m := h.send("local", "acme", "file_writer_default", "a.edi", []byte("first"))
	want := bus.MessageEventSubject(m.ID)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case s := <-seen:
			if s == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event on %s", want)
		}
	}
}
