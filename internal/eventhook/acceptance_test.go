package eventhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "wharf/internal/eventhook"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	_ "wharf/internal/protocol/file"
	_ "wharf/internal/protocol/httppost"
)

// fast is a retry policy that keeps a test short.
var fast = map[string]any{"base": "50ms", "max_delay": "200ms", "max_retries": 20}

// call sends a JSON request to the gateway's REST API and decodes the answer into out.
func call(t *testing.T, g *gatewaytest.Gateway, method, path string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	code, data := g.API(method, path, "application/json", body)
	if code/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, code, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within a minute: %s", what, state)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for work
	}
}

// subscribe creates an event-webhook subscription through REST and starts it; the
// receiver learns the secret the gateway generated.
func subscribe(t *testing.T, g *gatewaytest.Gateway, r *receiver, url string, fields map[string]any) {
	t.Helper()
	var out struct {
		Secret string `json:"secret"`
	}
	fields["url"], fields["retry"] = url, fast
	call(t, g, "POST", "/api/v1/event-webhooks", fields, &out)
	if !strings.HasPrefix(out.Secret, "whsec_") {
		t.Fatalf("the generated secret is %q", out.Secret)
	}
	r.setSecret(out.Secret)
	call(t, g, "POST", "/api/v1/services/event-webhook/"+fields["name"].(string)+"/start", map[string]any{}, nil)
}

// flakyTarget is the in-house system of the test: it answers the first attempt of each
// document with 503, so every delivery goes through a retry.
type flakyTarget struct {
	mu   sync.Mutex
	seen map[string]int
}

func (f *flakyTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen[string(b)]++
	n := f.seen[string(b)]
	f.mu.Unlock()
	if n == 1 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// The check of issue 14: an event-webhook receiver verifies every signature with the
// Standard Webhooks algorithm and sees every transition of every message once — every
// history row as one acknowledged event, none twice, none missing — in a run where the
// in-house target and the receiver each fail first attempts (retries) and the gateway
// restarts in the middle. A second subscription with a party filter sees only its
// party's message events. SQLite, and PostgreSQL with a second process working beside.
func TestEventWebhookAcceptance(t *testing.T) {
	for name, url := range dbtest.URLs() {
		t.Run(name, func(t *testing.T) { runAcceptance(t, dbtest.ResolveURL(t, url)) })
	}
}

func runAcceptance(t *testing.T, dbURL string) {
	ctx := context.Background()
	dir := t.TempDir()
	settings := map[string]string{"sweep_interval": "100ms", "wakeup_backoff": "1s"}

	all := newReceiver()
	// The first attempt of every third event fails, so the subscription's policy retries.
	all.fail = func(id string, seen int) int {
		n, _ := strconv.ParseInt(strings.TrimPrefix(id, "wharf-event-"), 10, 64)
		if n%3 == 0 && seen == 1 {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	allSrv := httptest.NewServer(all)
	defer allSrv.Close()
	acme := newReceiver()
	acmeSrv := httptest.NewServer(acme)
	defer acmeSrv.Close()
	erp := httptest.NewServer(&flakyTarget{seen: map[string]int{}})
	defer erp.Close()

	first := gatewaytest.Start(t, gatewaytest.Options{DBURL: dbURL, DataDir: dir, Settings: settings})
	for _, p := range []string{"acme", "globex"} {
		call(t, first, "POST", "/api/v1/partners", map[string]string{"name": p}, nil)
	}
	call(t, first, "POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": "erp", "url": erp.URL, "retry": fast}, nil)
	call(t, first, "POST", "/api/v1/services/http-poster/erp/start", map[string]any{}, nil)
	call(t, first, "POST", "/api/v1/routes", map[string]any{"source": "file_poller_default", "from": "*", "to": "local", "target": "erp"}, nil)
	subscribe(t, first, all, allSrv.URL+"/events", map[string]any{"name": "all_events", "events": []string{"*"}})
	subscribe(t, first, acme, acmeSrv.URL+"/events", map[string]any{"name": "acme_messages", "events": []string{"message.*"}, "party": "acme"})

	if dbURL != "" {
		// On PostgreSQL a second process of the installation runs the outbox and the
		// subscriptions too, throughout: the cursor's lock and the claims share the work.
		gatewaytest.Start(t, gatewaytest.Options{Peer: first, Settings: settings})
	}

	const canary = "CANARY-7f3a"
	var ids []int64
	ingest := func(g *gatewaytest.Gateway, from string, n int) {
		t.Helper()
		var items []module.Incoming
		for i := range n {
			items = append(items, module.Incoming{Source: "file_poller_default", From: persistence.PartyName(from), To: "local",
				FileName: persistence.FileName(fmt.Sprintf("secret-name-%s-%d.edi", from, len(ids)+i)),
				Body:     strings.NewReader(fmt.Sprintf("%s %s %d", canary, from, len(ids)+i))})
		}
		res, err := g.Dispatcher.Ingest(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			ids = append(ids, r.Message.ID)
		}
	}
	ingest(first, "acme", 3)
	ingest(first, "globex", 2)
	// A restart while deliveries and events are under way.
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, beforeRestart, _, _ := all.snapshot()
	firstBatch := slices.Clone(ids)
	second := gatewaytest.Start(t, gatewaytest.Options{DBURL: dbURL, DataDir: dir, Settings: settings})
	ingest(second, "acme", 3)

	// Every message delivered, and every history row of every message acknowledged.
	history := func() map[string]persistence.HistoryEntry {
		out := map[string]persistence.HistoryEntry{}
		for _, id := range ids {
			hs, err := second.Store.ListHistory(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				out["wharf-event-"+strconv.FormatInt(h.ID, 10)] = h
			}
		}
		return out
	}
	waitFor(t, "every message delivered and every event acknowledged", func() (bool, string) {
		for _, id := range ids {
			m, err := second.Store.GetMessage(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != persistence.StatusDelivered {
				return false, fmt.Sprintf("message %d is %s", id, m.Status)
			}
		}
		want := history()
		got, _, _, _ := all.snapshot()
		for id := range want {
			if _, ok := got[id]; !ok {
				return false, fmt.Sprintf("%d of %d events acknowledged; %s missing", len(got), len(want), id)
			}
		}
		return true, ""
	})

	want := history()
	got, acked, bad, bodies := all.snapshot()
	if len(bad) > 0 {
		t.Fatalf("requests that failed verification: %v", bad)
	}
	for id, n := range acked {
		if n != 1 {
			t.Errorf("event %s acknowledged %d times", id, n)
		}
		if _, ok := want[id]; !ok {
			t.Errorf("event %s is no history row of the messages", id)
		}
	}
	retried := 0
	for id, h := range want {
		e := got[id]
		if e.Data.EventID != h.ID || e.Data.MessageID != h.MessageID || e.Data.FromState != h.FromState || e.Data.ToState != h.ToState {
			t.Errorf("event %s = %+v, want history row %+v", id, e.Data, h)
		}
		if e.Data.CorrelationID == "" || e.Data.OriginEventID == "" || e.Data.To != "local" {
			t.Errorf("event %s lacks its message's parties or correlation: %+v", id, e.Data)
		}
		if n, _ := strconv.ParseInt(strings.TrimPrefix(id, "wharf-event-"), 10, 64); n%3 == 0 {
			retried++
		}
	}
	if retried == 0 {
		t.Fatal("no event went through a retry")
	}
	// The restart was in the middle: the second process sent events of messages the
	// first one took in.
	afterRestart := 0
	for id, h := range want {
		if _, before := beforeRestart[id]; !before && slices.Contains(firstBatch, h.MessageID) {
			afterRestart++
		}
	}
	if afterRestart == 0 {
		t.Fatal("the first process sent every event of its messages before the restart")
	}
	t.Logf("%d messages, %d events acknowledged once each, %d of them after a failed first attempt, %d of the first process's messages after the restart", len(ids), len(want), retried, afterRestart)
	for _, id := range ids {
		var types []string
		for _, h := range sortedHistory(want, id) {
			types = append(types, got["wharf-event-"+strconv.FormatInt(h.ID, 10)].Type)
		}
		for _, must := range []string{"message.received", "message.dispatched", "delivery.retrying", "delivery.delivered", "message.delivered"} {
			if !slices.Contains(types, must) {
				t.Errorf("message %d: events %v lack %s", id, types, must)
			}
		}
	}
	for _, b := range bodies {
		if strings.Contains(b, canary) || strings.Contains(b, "secret-name") {
			t.Fatalf("an event carries payload content or a file name: %s", b)
		}
	}

	// The party filter: every message event of acme's messages, nothing else.
	acmeGot, _, acmeBad, _ := acme.snapshot()
	if len(acmeBad) > 0 {
		t.Fatalf("party subscription: requests that failed verification: %v", acmeBad)
	}
	wantAcme := 0
	for id, h := range want {
		e := got[id]
		if e.Data.From == "acme" && strings.HasPrefix(e.Type, "message.") {
			wantAcme++
			if _, ok := acmeGot[id]; !ok {
				waitFor(t, "acme's event "+id, func() (bool, string) {
					g, _, _, _ := acme.snapshot()
					_, ok := g[id]
					return ok, fmt.Sprintf("history row %+v", h)
				})
			}
		}
	}
	acmeGot, _, _, _ = acme.snapshot()
	for id, e := range acmeGot {
		if e.Data.From != "acme" || !strings.HasPrefix(e.Type, "message.") {
			t.Errorf("party subscription got %s: %s from %s", id, e.Type, e.Data.From)
		}
	}
	if len(acmeGot) != wantAcme {
		t.Errorf("party subscription got %d events, want %d", len(acmeGot), wantAcme)
	}
}

func sortedHistory(all map[string]persistence.HistoryEntry, messageID int64) []persistence.HistoryEntry {
	var out []persistence.HistoryEntry
	for _, h := range all {
		if h.MessageID == messageID {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b persistence.HistoryEntry) int { return int(a.ID - b.ID) })
	return out
}
