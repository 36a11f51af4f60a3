package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/callbacks"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/metrics/metricstest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/stdwebhook"
)

// callbackTarget sets up an in-house target that waits for the system's report (a file
// writer with await_completion) and gives it a callback secret; it returns the secret.
func (h *harness) callbackTarget(name string) string {
	h.t.Helper()
	h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
	h.mustJSON("POST", "/api/v1/plugins/configs/file-writer", map[string]any{"name": name,
		"directory": filepath.Join(h.data, name), "await_completion": "1h"}, nil)
	h.mustJSON("POST", "/api/v1/services/file-writer/"+name+"/start", map[string]any{}, nil)
	return h.newCallbackSecret(name)
}

func (h *harness) newCallbackSecret(target string) string {
	h.t.Helper()
	var created struct {
		ID     int64  `json:"id"`
		Secret string `json:"secret"`
	}
	h.mustJSON("POST", "/api/v1/callbacks/"+target+"/secrets", map[string]any{}, &created)
	if !strings.HasPrefix(created.Secret, "whsec_") {
		h.t.Fatalf("created secret: %+v", created)
	}
	return created.Secret
}

// signedCallback is one callback request as an in-house system sends it.
type signedCallback struct {
	id     string
	at     time.Time
	body   string
	secret []string // signed with each (several signatures in the header)
}

// post sends the callback to target, signed as the Standard Webhooks reference does; it
// returns the status and the error code.
func (h *harness) postCallback(target string, c signedCallback) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest("POST", "http://"+h.g.Addr()+"/api/v1/callbacks/"+target, strings.NewReader(c.body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	var sigs []string
	for _, s := range c.secret {
		key, err := stdwebhook.Key(s)
		if err != nil {
			h.t.Fatal(err)
		}
		stdwebhook.Sign(req.Header, key, c.id, c.at, []byte(c.body))
		sigs = append(sigs, req.Header.Get(stdwebhook.HeaderSignature))
	}
	if len(sigs) > 0 {
		req.Header.Set(stdwebhook.HeaderSignature, strings.Join(sigs, " "))
	} else {
		req.Header.Set(stdwebhook.HeaderID, c.id)
		req.Header.Set(stdwebhook.HeaderTimestamp, fmt.Sprint(c.at.Unix()))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	code := e.Error.Code
	for field := range e.Error.Details {
		code += ":" + field
	}
	return resp.StatusCode, code
}

// historyRows counts every history line of every message.
func (h *harness) historyRows() int {
	h.t.Helper()
	ctx := context.Background()
	msgs, _, err := h.g.Store.ListMessages(ctx, persistence.MessageFilter{ListOptions: persistence.ListOptions{Limit: 1000}})
	if err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		lines, err := h.g.Store.ListHistory(ctx, m.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		n += len(lines)
	}
	return n
}

// waitCallbacksApplied polls the metrics until the spool handed n callbacks to the store.
func (h *harness) waitCallbacksApplied(n float64) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := metricstest.Scrape(h.t, h.gw.URL()+"/metrics", "").Value("wharf_status_callbacks_total", nil)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%v status callbacks applied, want %v", got, n)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// downstreamMessage is a message's detail with the downstream status of its deliveries.
type downstreamMessage struct {
	Status     string `json:"status"`
	Deliveries []struct {
		ID         int64  `json:"id"`
		State      string `json:"state"`
		LastError  string `json:"last_error"`
		Downstream *struct {
			Status     string    `json:"status"`
			Reason     string    `json:"reason"`
			Reporter   string    `json:"reporter"`
			ReportedAt time.Time `json:"reported_at"`
			Final      bool      `json:"final"`
		} `json:"downstream"`
	} `json:"deliveries"`
	History []struct {
		Kind       string     `json:"kind"`
		ToState    string     `json:"to_state"`
		Actor      string     `json:"actor"`
		ReportedAt *time.Time `json:"reported_at"`
	} `json:"history"`
}

func (h *harness) downstream(id int64) (downstreamMessage, int) {
	h.t.Helper()
	var m downstreamMessage
	h.mustJSON("GET", fmt.Sprintf("/api/v1/messages/%d", id), nil, &m)
	n := 0
	for _, l := range m.History {
		if l.Kind == string(persistence.HistoryDownstreamStatus) {
			n++
		}
	}
	return m, n
}

// TestStatusCallbacksReplayedAndForged is the check of signed status callbacks: a
// callback replayed 10 times and sent out of order with another writes exactly the
// distinct rows; a forged signature or a stale timestamp writes nothing (rows counted
// before and after).
func TestStatusCallbacksReplayedAndForged(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			secret := h.callbackTarget("erp")
			m1 := h.send("local", "acme", "erp", "a.edi", []byte("first"))
			m2 := h.send("local", "acme", "erp", "b.edi", []byte("second"))
			h.waitHandoff(m1.ID, "awaiting_receipt")
			d2 := h.waitHandoff(m2.ID, "awaiting_receipt").Deliveries[0]
			now := time.Now()

			received := signedCallback{id: "msg_received_1", at: now, secret: []string{secret},
				body: fmt.Sprintf(`{"message_id":%d,"status":"received","timestamp":%q}`, m1.ID, now.Add(-2*time.Minute).Format(time.RFC3339))}
			processed := signedCallback{id: "msg_processed_1", at: now, secret: []string{secret},
				body: fmt.Sprintf(`{"message_id":%d,"status":"processed","timestamp":%q,"detail":"booked as 4711"}`, m1.ID, now.Add(-time.Minute).Format(time.RFC3339))}
			rejected := signedCallback{id: "msg_rejected_2", at: now, secret: []string{secret},
				body: fmt.Sprintf(`{"delivery_id":%d,"status":"rejected","reason":"unknown article 0815","timestamp":%q}`, d2.ID, now.Format(time.RFC3339))}

			// The later status first, then each of the three replayed 10 times, interleaved.
			sent := 0
			for i := 0; i < 10; i++ {
				for _, c := range []signedCallback{processed, received, rejected} {
					if code, errCode := h.postCallback("erp", c); code != http.StatusAccepted {
						t.Fatalf("callback %s: %d %s", c.id, code, errCode)
					}
					sent++
				}
			}
			h.waitCallbacksApplied(float64(sent))
			got, lines := h.downstream(m1.ID)
			if lines != 2 {
				t.Fatalf("message %d has %d downstream lines, want 2: %+v", m1.ID, lines, got.History)
			}
			ds := got.Deliveries[0].Downstream
			if got.Status != "delivered" || ds == nil || ds.Status != "processed" || !ds.Final || ds.Reporter != "callback:erp" ||
				ds.Reason != "booked as 4711" || !ds.ReportedAt.Equal(now.Add(-time.Minute).Truncate(time.Second)) {
				t.Fatalf("message %d after the callbacks: %+v, downstream %+v", m1.ID, got, ds)
			}
			got2, lines2 := h.downstream(m2.ID)
			if lines2 != 1 || got2.Status != "error" || got2.Deliveries[0].LastError != "unknown article 0815" ||
				got2.Deliveries[0].Downstream == nil || got2.Deliveries[0].Downstream.Status != "rejected" {
				t.Fatalf("message %d after the rejection: %+v (%d lines)", m2.ID, got2, lines2)
			}
			if n := metricstest.Scrape(t, h.gw.URL()+"/metrics", "").Value("wharf_status_callbacks_total", map[string]string{"outcome": "applied"}); n != 3 {
				t.Fatalf("%v callbacks applied, want 3", n)
			}

			// Forged, stale, unsigned, for an unknown target: 401, and nothing is written.
			before := h.historyRows()
			refusedBefore := metricstest.Scrape(t, h.gw.URL()+"/metrics", "").Value("wharf_inbound_requests_refused_total",
				map[string]string{"protocol": callbacks.Protocol})
			forgedSecret := stdwebhook.NewSecret()
			fresh := func(id, status string) string {
				return fmt.Sprintf(`{"message_id":%d,"status":%q,"reason":"x","timestamp":%q}`, m1.ID, status, now.Format(time.RFC3339))
			}
			for _, c := range []struct {
				name   string
				target string
				cb     signedCallback
			}{
				{"forged signature", "erp", signedCallback{id: "f1", at: time.Now(), secret: []string{forgedSecret}, body: fresh("f1", "rejected")}},
				{"stale timestamp", "erp", signedCallback{id: "f2", at: time.Now().Add(-6 * time.Minute), secret: []string{secret}, body: fresh("f2", "rejected")}},
				{"future timestamp", "erp", signedCallback{id: "f3", at: time.Now().Add(6 * time.Minute), secret: []string{secret}, body: fresh("f3", "rejected")}},
				{"no signature", "erp", signedCallback{id: "f4", at: time.Now(), body: fresh("f4", "rejected")}},
				{"another target's name", "file_writer_default", signedCallback{id: "f5", at: time.Now(), secret: []string{secret}, body: fresh("f5", "rejected")}},
				{"no such target", "nosuch", signedCallback{id: "f6", at: time.Now(), secret: []string{secret}, body: fresh("f6", "rejected")}},
			} {
				if code, errCode := h.postCallback(c.target, c.cb); code != http.StatusUnauthorized || errCode != "BAD_SIGNATURE" {
					t.Errorf("%s: %d %s, want 401 BAD_SIGNATURE", c.name, code, errCode)
				}
			}
			// A body refused after the signature verified: 400 naming the field, nothing written.
			for _, c := range []struct{ body, want string }{
				{`{"message_id":1,"status":"rejected","timestamp":"2026-01-01T00:00:00Z"}`, "INVALID_INPUT:reason"},
				{`{"message_id":1,"status":"processed","timestamp":"yesterday"}`, "INVALID_INPUT:timestamp"},
				{`{"message_id":1,"delivery_id":2,"status":"processed","timestamp":"2026-01-01T00:00:00Z"}`, "INVALID_INPUT:delivery_id"},
				{`{"message_id":1,"status":"processed","timestamp":"2026-01-01T00:00:00Z","extra":1}`, "INVALID_INPUT:extra"},
			} {
				if code, errCode := h.postCallback("erp", signedCallback{id: "bad", at: time.Now(), secret: []string{secret}, body: c.body}); code != 400 || errCode != c.want {
					t.Errorf("body %s: %d %s, want 400 %s", c.body, code, errCode, c.want)
				}
			}
			// What was accepted before is all applied: nothing new reached the store.
			h.waitCallbacksApplied(float64(sent))
			if after := h.historyRows(); after != before {
				t.Fatalf("history rows %d before the refused callbacks, %d after", before, after)
			}
			refused := metricstest.Scrape(t, h.gw.URL()+"/metrics", "").Value("wharf_inbound_requests_refused_total",
				map[string]string{"protocol": callbacks.Protocol})
			if refused-refusedBefore != 6 {
				t.Fatalf("%v refusals counted, want 6", refused-refusedBefore)
			}
			h.checkInvariant()
		})
	}
}

// TestStatusCallbackSecretRotation: while two secrets are valid a callback signed with
// either verifies (and one carrying both signatures); a revoked one no longer does.
func TestStatusCallbackSecretRotation(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			old := h.callbackTarget("erp")
			m := h.send("local", "acme", "erp", "a.edi", []byte("first"))
			h.waitHandoff(m.ID, "awaiting_receipt")
			fresh := h.newCallbackSecret("erp")
			body := func(status string) string {
				return fmt.Sprintf(`{"message_id":%d,"status":%q,"timestamp":%q}`, m.ID, status, time.Now().UTC().Format(time.RFC3339))
			}
			for i, secrets := range [][]string{{old}, {fresh}, {stdwebhook.NewSecret(), fresh}} {
				if code, errCode := h.postCallback("erp", signedCallback{id: fmt.Sprint("rot-", i), at: time.Now(), secret: secrets, body: body("step-" + fmt.Sprint(i))}); code != 202 {
					t.Fatalf("signed with secrets %d: %d %s", i, code, errCode)
				}
			}
			var list struct {
				Secrets []struct {
					ID         int64      `json:"id"`
					LastUsedAt *time.Time `json:"last_used_at"`
					Secret     string     `json:"secret"`
				} `json:"secrets"`
			}
			h.mustJSON("GET", "/api/v1/callbacks/erp/secrets", nil, &list)
			if len(list.Secrets) != 2 || list.Secrets[0].LastUsedAt == nil || list.Secrets[1].LastUsedAt == nil ||
				list.Secrets[0].Secret != "" {
				t.Fatalf("secrets: %+v", list)
			}
			h.mustJSON("POST", fmt.Sprintf("/api/v1/callbacks/erp/secrets/%d/revoke", list.Secrets[0].ID), map[string]any{}, nil)
			if code, _ := h.postCallback("erp", signedCallback{id: "rot-old", at: time.Now(), secret: []string{old}, body: body("late")}); code != 401 {
				t.Fatalf("revoked secret: %d, want 401", code)
			}
			if code, _ := h.postCallback("erp", signedCallback{id: "rot-new", at: time.Now(), secret: []string{fresh}, body: body("processed")}); code != 202 {
				t.Fatalf("current secret after the revocation: %d", code)
			}
			h.waitCallbacksApplied(4)
			if _, lines := h.downstream(m.ID); lines != 4 {
				t.Fatalf("%d downstream lines, want 4", lines)
			}
			h.waitStatus(m.ID, "delivered")
		})
	}
}

// TestStatusCallbacksSurviveACrash: callbacks journaled by a process that died before
// applying them (the spool's file as a crash leaves it, torn last line included) are
// applied by the next start on the same data directory, each once.
func TestStatusCallbacksSurviveACrash(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			url := dbtest.ResolveURL(t, url) // both runs open the same database
			first := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir})
			h := &harness{t: t, g: first.Gateway, gw: first, data: dir}
			h.callbackTarget("erp")
			m := h.send("local", "acme", "erp", "a.edi", []byte("first"))
			d := h.waitHandoff(m.ID, "awaiting_receipt").Deliveries[0]
			if err := first.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}

			// A process that accepted three callbacks (one twice) and died before applying
			// any, in the middle of a fourth append.
			sp, err := callbacks.Open(filepath.Join(dir, "callbacks"), failingApplier{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			sp.Start()
			at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			for i, c := range []persistence.StatusCallback{
				{Target: "erp", WebhookID: "c1", DeliveryID: d.ID, Status: "received", ReportedAt: at},
				{Target: "erp", WebhookID: "c1", DeliveryID: d.ID, Status: "received", ReportedAt: at},
				{Target: "erp", WebhookID: "c2", DeliveryID: d.ID, Status: "processed", ReportedAt: at.Add(time.Minute)},
			} {
				if err := sp.Append(ctx, c); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			tearJournal(t, filepath.Join(dir, "callbacks", callbacks.JournalName))

			second := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir})
			h = &harness{t: t, g: second.Gateway, gw: second, data: dir}
			h.waitCallbacksApplied(3)
			got, lines := h.downstream(m.ID)
			if lines != 2 || got.Status != "delivered" {
				t.Fatalf("after the restart: %d downstream lines, %+v", lines, got)
			}
			if err := sp.Stop(ctx); err != nil {
				t.Logf("stop the dead spool: %v", err)
			}
		})
	}
}

// failingApplier is a database that never answers, as for a process about to die.
type failingApplier struct{}

func (failingApplier) ApplyCallbacks(context.Context, []persistence.StatusCallback) ([]persistence.CallbackOutcome, error) {
	return nil, persistence.ErrUnavailable
}

// tearJournal appends half a line, as a crash in the middle of an append leaves it.
func tearJournal(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(`0badc0de {"target":"erp","webhook_id":"c3","sta`); err != nil {
		t.Fatal(err)
	}
}
