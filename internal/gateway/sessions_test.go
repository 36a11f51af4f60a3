package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
)

// The acceptance check of ordered sessions: 1,000 messages on 20 sessions of an ordered
// route through an http-poster whose loopback receiver refuses message 137 (of session 5)
// with HTTP 400, permanent under the default policy. Every other session completes in
// order; session 5 stops at 137 with the rest parked; after the receiver is fixed, a
// resubmit delivers 137 and then the parked ones in order (or a skip releases them
// without it); the receiver's log is strictly ordered per session. On SQLite, on
// PostgreSQL, and on PostgreSQL with two gateways working the target.
func TestOrderedSessionsAcceptance(t *testing.T) {
	for name, url := range databases(t) {
		for _, gateways := range []int{1, 2} {
			if gateways == 2 && url == "" {
				continue // SQLite serves one process
			}
			for _, recovery := range []string{"resubmit", "skip"} {
				t.Run(fmt.Sprintf("%s/%d gateways/%s", name, gateways, recovery), func(t *testing.T) {
					t.Parallel() // mostly waiting on commits: the variants overlap well
					runOrderedAcceptance(t, url, gateways, recovery)
				})
			}
		}
	}
}

const (
	acceptanceMessages = 1000
	acceptanceSessions = 20
	brokenMessage      = 137
)

// sessionOf puts message n (1-based) in its session; message 137 is in session 5.
func sessionOf(n int) int { return (n + 8) % acceptanceSessions }

// orderedReceiver logs the documents it accepts per session and refuses the broken one
// with 400 while broken is set.
type orderedReceiver struct {
	broken atomic.Bool
	mu     sync.Mutex
	log    map[int][]int // session → message numbers in the order accepted
	posts  atomic.Int64
}

func (o *orderedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	o.posts.Add(1)
	var s, n int
	if _, err := fmt.Sscanf(string(body), "session=%d message=%d", &s, &n); err != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		return
	}
	if n == brokenMessage && o.broken.Load() {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.log[s] = append(o.log[s], n)
	o.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (o *orderedReceiver) snapshot() map[int][]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[int][]int, len(o.log))
	for k, v := range o.log {
		out[k] = slices.Clone(v)
	}
	return out
}

func runOrderedAcceptance(t *testing.T, dbURL string, gateways int, recovery string) {
	ctx := context.Background()
	settings := map[string]string{"sweep_interval": "100ms", "wakeup_backoff": "1s"}
	if gateways > 1 {
		dbURL = dbtest.ResolveURL(t, dbURL) // both processes open this one database
	}
	first := gatewaytest.Start(t, gatewaytest.Options{DBURL: dbURL, Settings: settings})
	h := &harness{t: t, g: first.Gateway, gw: first, data: first.DataDir}
	recv := &orderedReceiver{log: map[int][]int{}}
	recv.broken.Store(true)
	srv := httptest.NewServer(recv)
	defer srv.Close()

	h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
	h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": "erp", "url": srv.URL + "/in",
		"max_concurrent": acceptanceSessions}, nil)
	h.mustJSON("POST", "/api/v1/services/http-poster/erp/start", map[string]any{}, nil)
	h.mustJSON("POST", "/api/v1/routes", map[string]any{"source": "file_poller_default", "from": "acme", "to": "local",
		"target": "erp", "ordered": true, "session_by": "x-session"}, nil)

	ingesters := []module.Ingester{first.Dispatcher}
	if gateways > 1 {
		// The second process starts with the instance enabled in the shared database.
		second := gatewaytest.Start(t, gatewaytest.Options{Peer: first, Settings: settings})
		ingesters = append(ingesters, second.Dispatcher)
	}

	// Batches of 50 in message order, alternately through each process's dispatcher.
	ids := make(map[int]int64, acceptanceMessages) // message number → id
	for start, batch := 1, 0; start <= acceptanceMessages; start, batch = start+50, batch+1 {
		var items []module.Incoming
		for n := start; n < start+50; n++ {
			items = append(items, module.Incoming{Source: "file_poller_default", From: "acme", To: "local",
				FileName: persistence.FileName(fmt.Sprintf("m%04d.edi", n)),
				Body:     bytes.NewReader(fmt.Appendf(nil, "session=%d message=%d", sessionOf(n), n)),
				Metadata: map[string]string{"x-session": strconv.Itoa(sessionOf(n))}})
		}
		res, err := ingesters[batch%len(ingesters)].Ingest(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			ids[start+i] = r.Message.ID
		}
	}

	// Session 5 stops at 137 with the rest parked; everything else is delivered.
	var broken5 []int
	for n := brokenMessage + 1; n <= acceptanceMessages; n++ {
		if sessionOf(n) == sessionOf(brokenMessage) {
			broken5 = append(broken5, n)
		}
	}
	want := acceptanceMessages - 1 - len(broken5)
	waitFor(t, func() (bool, string) {
		counts := stateCounts(t, h)
		return counts[persistence.DeliveryDelivered] == want && counts[persistence.DeliveryFailed] == 1 &&
				counts[persistence.DeliveryParked] == len(broken5),
			fmt.Sprint(counts)
	})
	blockedID := deliveryOf(t, h, ids[brokenMessage])
	var sessions struct {
		Sessions []persistence.BlockedSession `json:"sessions"`
	}
	h.mustJSON("GET", "/api/v1/sessions", nil, &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].BlockedBy != blockedID || sessions.Sessions[0].Parked != len(broken5) ||
		sessions.Sessions[0].Key != "erp|x-session=5" {
		t.Fatalf("blocked sessions = %+v", sessions.Sessions)
	}
	m := h.waitStatus(ids[broken5[0]], "held")
	if m.Deliveries[0].State != "parked" {
		t.Fatalf("message after the broken one: %+v", m.Deliveries)
	}

	// Fix the receiver, then recover.
	recv.broken.Store(false)
	var d persistence.Delivery
	h.mustJSON("POST", fmt.Sprintf("/api/v1/deliveries/%d/%s", blockedID, recovery), map[string]any{}, &d)
	delivered := acceptanceMessages
	if recovery == "skip" {
		delivered--
	}
	waitFor(t, func() (bool, string) {
		counts := stateCounts(t, h)
		return counts[persistence.DeliveryDelivered] == delivered, fmt.Sprint(counts)
	})
	h.mustJSON("GET", "/api/v1/sessions", nil, &sessions)
	if len(sessions.Sessions) != 0 {
		t.Fatalf("still blocked: %+v", sessions.Sessions)
	}

	// The receiver saw every session strictly in order, each document once.
	got := recv.snapshot()
	for s := range acceptanceSessions {
		var wantSeq []int
		for n := 1; n <= acceptanceMessages; n++ {
			if sessionOf(n) == s && !(recovery == "skip" && n == brokenMessage) {
				wantSeq = append(wantSeq, n)
			}
		}
		if !slices.Equal(got[s], wantSeq) {
			t.Fatalf("session %d received %v, want %v", s, got[s], wantSeq)
		}
	}
	t.Logf("%d POSTs for %d documents", recv.posts.Load(), acceptanceMessages)
	h.checkInvariant()
}

// stateCounts counts the deliveries by state.
func stateCounts(t *testing.T, h *harness) map[persistence.DeliveryState]int {
	t.Helper()
	out, err := h.g.Store.CountDeliveriesByState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func deliveryOf(t *testing.T, h *harness, messageID int64) int64 {
	t.Helper()
	ds, err := h.g.Store.ListDeliveries(context.Background(), messageID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries of message %d: %v %v", messageID, ds, err)
	}
	return ds[0].ID
}

// waitFor polls cond until it holds, or fails the test after a minute with its last word.
func waitFor(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reached within a minute: %s", strings.TrimSpace(state))
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for work
	}
}

// A blocked session raises one session_blocked alert, recorded by the notifier module, and
// the session unblocking resolves it.
func TestSessionBlockedAlert(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusForbidden)
			}))
			defer refusing.Close()
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": "picky", "url": refusing.URL}, nil)
			h.mustJSON("POST", "/api/v1/services/http-poster/picky/start", map[string]any{}, nil)
			h.mustJSON("POST", "/api/v1/routes", map[string]any{"source": "file_poller_default", "from": "acme", "to": "local",
				"target": "picky", "ordered": true}, nil)
			var items []module.Incoming
			for i := range 3 {
				items = append(items, module.Incoming{Source: "file_poller_default", From: "acme", To: "local",
					FileName: persistence.FileName(fmt.Sprintf("o%d.edi", i)), Body: strings.NewReader("x")})
			}
			res, err := h.g.Dispatcher.Ingest(context.Background(), items)
			if err != nil {
				t.Fatal(err)
			}
			blocker := deliveryOf(t, h, res[0].Message.ID)
			type alertRow struct {
				Code       string `json:"code"`
				Subject    struct{ ID string }
				ResolvedAt *time.Time `json:"resolved_at"`
			}
			var alerts struct {
				Alerts []alertRow `json:"alerts"`
			}
			poll(t, "the session_blocked alert", func() bool {
				h.mustJSON("GET", "/api/v1/alerts?code=session_blocked", nil, &alerts)
				return len(alerts.Alerts) == 1
			})
			if a := alerts.Alerts[0]; a.Subject.ID != "picky|acme→local" || a.ResolvedAt != nil {
				t.Fatalf("alert = %+v", a)
			}
			h.mustJSON("POST", fmt.Sprintf("/api/v1/deliveries/%d/skip", blocker), map[string]any{}, nil)
			// The next one fails too and blocks the session again: a second alert, and the
			// first resolved.
			poll(t, "the first alert resolved and a second raised", func() bool {
				alerts.Alerts = nil // an unresolved alert leaves resolved_at out
				h.mustJSON("GET", "/api/v1/alerts?code=session_blocked", nil, &alerts)
				resolved := 0
				for _, a := range alerts.Alerts {
					if a.ResolvedAt != nil {
						resolved++
					}
				}
				return len(alerts.Alerts) == 2 && resolved == 1
			})
		})
	}
}
