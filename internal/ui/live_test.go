package ui

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/storage"
)

// storeEvents announces changes straight from the store's history hook, as the gateway
// does through the bus.
type storeEvents struct{ store *db.Store }

func (e storeEvents) SubscribeMessages(fn func(int64)) (func(), error) {
	e.store.OnHistory(func(ids []int64) {
		for _, id := range ids {
			fn(id)
		}
	})
	return func() { e.store.OnHistory(nil) }, nil
}

// setupLive is setupMessages with live events and a log ring.
func setupLive(t *testing.T) (*messagesBundle, *logging.Ring) {
	t.Helper()
	b := newBundle(t)
	blobs, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ring := logging.NewRing(100, slog.LevelDebug)
	s := newServer(t, b, func(d *Deps) {
		d.Actions, d.Payloads = storeActions{b.store}, blobs
		d.Events, d.Logs = storeEvents{b.store}, ring
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	t.Cleanup(s.Close)
	messageFixture(t, b.store)
	return &messagesBundle{bundle: b, blobs: blobs, ui: s}, ring
}

// stream opens an SSE stream with c's cookies and returns its events as they come; the
// channel closes when the stream ends.
func (c *client) stream(t *testing.T, path string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.b.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s = %d %s\n%s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		var ev sseEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Name != "" {
					ev.Data = strings.Join(data, "\n")
					ch <- ev
				}
				ev, data = sseEvent{}, nil
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return ch
}

// waitEvent reads events until one named name holds want, failing at the deadline.
func waitEvent(t *testing.T, ch <-chan sseEvent, name, want string) sseEvent {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before a %q event with %q", name, want)
			}
			if ev.Name == name && strings.Contains(ev.Data, want) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event with %q in time", name, want)
		}
	}
}

func TestLiveMessageDetail(t *testing.T) {
	b, _ := setupLive(t)
	c := b.signedIn(t)
	ctx := context.Background()
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	page := c.get(t, fmt.Sprintf("/ui/messages/%d", m.ID))
	if !strings.Contains(page.body, fmt.Sprintf(`sse-connect="/ui/live/messages/%d"`, m.ID)) {
		t.Fatalf("detail does not connect to its stream:\n%s", page.body)
	}

	events := c.stream(t, fmt.Sprintf("/ui/live/messages/%d", m.ID))
	// The first render comes at once, so a change between page and stream is not lost.
	waitEvent(t, events, "info", "in_progress")

	claims, err := b.store.ClaimDeliveries(ctx, writerInst, 10, time.Minute, time.Now())
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim = %d, %v", len(claims), err)
	}
	d := claims[0].Delivery
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID,
		Token: d.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "refused by peer", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	// One render sends the parts in page order: information, deliveries, …, history.
	waitEvent(t, events, "info", ">error<")
	// A failed delivery brings its redeliver button, which leads to the confirmation.
	waitEvent(t, events, "deliveries", fmt.Sprintf(`href="/ui/messages/%d/deliveries/%d/redeliver"`, m.ID, d.ID))
	waitEvent(t, events, "history", "refused by peer")

	// Redeliver and deliver: the status reaches delivered without a reload.
	if _, err := b.store.Redeliver(ctx, d.ID, persistence.ResendSame, "user:alice"); err != nil {
		t.Fatal(err)
	}
	claims, err = b.store.ClaimDeliveries(ctx, writerInst, 10, time.Minute, time.Now())
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim again = %d, %v", len(claims), err)
	}
	d = claims[0].Delivery
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID,
		Token: d.ClaimToken, Kind: persistence.OutcomeDelivered, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, "info", ">delivered<")

	for _, path := range []string{"/ui/live/messages/999999", "/ui/live/messages/x"} {
		if r := c.get(t, path); r.status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, r.status)
		}
	}
}

func TestLiveMessageListKeepsFilters(t *testing.T) {
	b, _ := setupLive(t)
	c := b.signedIn(t)
	page := c.get(t, "/ui/messages?from=beta")
	if !strings.Contains(page.body, `sse-connect="/ui/live/messages?from=beta"`) {
		t.Fatalf("list does not stream with its filters:\n%s", page.body)
	}
	events := c.stream(t, "/ui/live/messages?from=beta")
	waitEvent(t, events, "results", "No messages match.")

	acme := b.insert(t, 1, acmeParty, writerInst)[0]
	beta := b.insert(t, 1, betaParty, writerInst)[0]
	ev := waitEvent(t, events, "results", fmt.Sprintf(`href="/ui/messages/%d"`, beta.ID))
	if strings.Contains(ev.Data, fmt.Sprintf(`href="/ui/messages/%d"`, acme.ID)) {
		t.Errorf("filtered live rows show a message of another party:\n%s", ev.Data)
	}
	if r := c.get(t, "/ui/live/messages?status=nonsense"); r.status != http.StatusBadRequest {
		t.Errorf("stream with a bad filter = %d, want 400", r.status)
	}
}

func TestLiveNeedsSession(t *testing.T) {
	b, _ := setupLive(t)
	c := b.client(t)
	for _, path := range []string{"/ui/live/dashboard", "/ui/live/messages", "/ui/live/messages/1", "/ui/live/logs"} {
		if r := c.get(t, path); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/ui/sign-in") {
			t.Errorf("GET %s without a session = %d to %q, want 303 to sign-in", path, r.status, r.header.Get("Location"))
		}
	}
}

func TestLiveStreamsEndOnClose(t *testing.T) {
	b, _ := setupLive(t)
	c := b.signedIn(t)
	events := c.stream(t, "/ui/live/dashboard")
	waitEvent(t, events, "dashboard", "Messages by status")
	b.ui.Close()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("stream still open after Close")
		}
	}
}

var svgRE = regexp.MustCompile(`(?s)<svg class="chart".*?</svg>`)

func TestDashboard(t *testing.T) {
	b, _ := setupLive(t)
	c := b.signedIn(t)
	ctx := context.Background()
	now := b.clock.Now()
	// in_progress 1 h ago and 3 days ago, not_routed 2 h ago, received 10 days ago.
	for _, m := range []struct {
		age      time.Duration
		targets  []persistence.InstanceName
		dispatch bool
	}{
		{time.Hour, []persistence.InstanceName{writerInst}, true},
		{3 * 24 * time.Hour, []persistence.InstanceName{writerInst}, true},
		{2 * time.Hour, nil, true},
		{10 * 24 * time.Hour, nil, false},
	} {
		id, err := b.store.AllocateMessageIDs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		nm := persistence.NewMessage{Message: persistence.Message{ID: id, From: acmeParty, To: localParty, Source: pollerInst,
			OriginalFileName: "order.edi", SHA256: strings.Repeat("0", 64), CreatedAt: now.Add(-m.age),
			CorrelationID: "c", OriginEventID: fmt.Sprint(id)},
			Dispatch: m.dispatch, Targets: m.targets}
		if _, err := b.store.InsertMessages(ctx, []persistence.NewMessage{nm}); err != nil {
			t.Fatal(err)
		}
	}
	body := c.get(t, "/ui/").body
	for _, want := range []string{
		// status, now, 24 h, 7 d
		`In progress</span></a></th>
<td class="numeric">2</td><td class="numeric">1</td><td class="numeric">2</td>`,
		`Not routed</span></a></th>
<td class="numeric">1</td><td class="numeric">1</td><td class="numeric">1</td>`,
		`Received</span></a></th>
<td class="numeric">1</td><td class="numeric">0</td><td class="numeric">0</td>`,
		`<tfoot><tr><th scope="row">All</th><td class="numeric">4</td><td class="numeric">2</td><td class="numeric">3</td></tr></tfoot>`,
		// the problems link to the list filtered by status
		`<li><a href="/ui/messages?status=not_routed"><span class="badge badge-not_routed">Not routed</span> 1 message</a></li>`,
		`sse-connect="/ui/live/dashboard"`,
		`>Message 1</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}

	svg := svgRE.FindString(body)
	if svg == "" {
		t.Fatalf("dashboard has no chart:\n%s", body)
	}
	var doc struct {
		XMLName xml.Name `xml:"svg"`
		Title   string   `xml:"title"`
		Desc    string   `xml:"desc"`
		Rects   []struct {
			Class string `xml:"class,attr"`
			X     int    `xml:"x,attr"`
			H     int    `xml:"height,attr"`
			Title string `xml:"title"`
		} `xml:"rect"`
	}
	if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
		t.Fatalf("chart is not XML: %v\n%s", err, svg)
	}
	// Two messages in the last 24 h, in different hours: two bars of full height.
	if len(doc.Rects) != 2 || doc.Title == "" || !strings.Contains(doc.Desc, "2 messages") {
		t.Fatalf("chart = %+v", doc)
	}
	for _, r := range doc.Rects {
		if r.H != chartPlotH {
			t.Errorf("bar %q is %d high, want %d", r.Title, r.H, chartPlotH)
		}
	}
	if doc.Rects[0].Class != "chart-bar chart-problem" || doc.Rects[1].Class != "chart-bar chart-active" ||
		doc.Rects[0].X >= doc.Rects[1].X {
		t.Errorf("bars = %+v, want the not routed one, then the in progress one an hour later", doc.Rects)
	}

	events := c.stream(t, "/ui/live/dashboard")
	waitEvent(t, events, "dashboard", `<td class="numeric">4</td>`)
	b.insert(t, 1, betaParty, writerInst)
	waitEvent(t, events, "dashboard", `<td class="numeric">5</td>`)
}

func TestHourlyChart(t *testing.T) {
	first := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ch := hourlyChart(first, []persistence.HourCount{
		{Hour: first, Status: persistence.StatusDelivered, Count: 3},
		{Hour: first, Status: persistence.StatusError, Count: 1},
		{Hour: first.Add(5 * time.Hour), Status: persistence.StatusDelivered, Count: 4},
		{Hour: first.Add(-time.Hour), Status: persistence.StatusDelivered, Count: 9}, // before the span
		{Hour: first.Add(chartHours * time.Hour), Status: persistence.StatusDelivered, Count: 9},
	})
	if ch.Total != 8 || ch.Max != 4 || len(ch.Bars) != 3 {
		t.Fatalf("chart = total %d, max %d, %d bars", ch.Total, ch.Max, len(ch.Bars))
	}
	// Hour 0 stacks delivered (3 of 4) under the error (1 of 4); hour 5 is full height.
	want := []chartBar{
		{X: chartLeft + 2, Y: chartBase - 113, W: 16, H: 113, Class: "delivered"},
		{X: chartLeft + 2, Y: chartBase - 150, W: 16, H: 37, Class: "problem"},
		{X: chartLeft + 5*chartBarW + 2, Y: chartBase - 150, W: 16, H: 150, Class: "delivered"},
	}
	for i, w := range want {
		g := ch.Bars[i]
		g.Title = ""
		if g != w {
			t.Errorf("bar %d = %+v, want %+v", i, g, w)
		}
	}
	if !strings.Contains(ch.Bars[1].Title, "error 1") {
		t.Errorf("bar title %q does not name the status", ch.Bars[1].Title)
	}
	if empty := hourlyChart(first, nil); len(empty.Bars) != 0 || !strings.Contains(empty.Desc, "No messages") {
		t.Errorf("empty chart = %+v", empty)
	}
}

func TestLogsPage(t *testing.T) {
	b, ring := setupLive(t)
	c := b.signedIn(t)
	log := slog.New(ring.Handler()).With("component", "test")
	log.Debug("polling the inbox")
	log.Info("message ingested", "file", "order-1.edi")
	log.Warn("partner slow", "partner", "acme")
	log.Error("delivery failed", "target", "writer")

	for _, tc := range []struct {
		query      string
		want, dont []string
	}{
		{"", []string{"polling the inbox", "message ingested", "partner slow", "delivery failed"}, nil},
		{"?level=warn", []string{"partner slow", "delivery failed"}, []string{"polling the inbox", "message ingested"}},
		{"?level=error", []string{"delivery failed"}, []string{"partner slow"}},
		{"?level=debug&q=ORDER-1", []string{"message ingested"}, []string{"partner slow", "delivery failed"}},
		{"?level=warn&q=order-1", []string{"No log lines match."}, []string{"message ingested"}},
	} {
		body := c.get(t, "/ui/logs"+tc.query).body
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("logs%s lacks %q", tc.query, w)
			}
		}
		for _, d := range tc.dont {
			if strings.Contains(body, d) {
				t.Errorf("logs%s shows %q", tc.query, d)
			}
		}
	}
	if r := c.get(t, "/ui/logs?level=loud"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "Choose a level") {
		t.Errorf("bad level = %d\n%s", r.status, r.body)
	}
	if r := c.get(t, "/ui/logs?q="+strings.Repeat("x", maxLogQuery+1)); r.status != http.StatusBadRequest {
		t.Errorf("long text = %d, want 400", r.status)
	}

	events := c.stream(t, "/ui/live/logs?level=warn")
	waitEvent(t, events, "logs", "partner slow")
	log.Error("disk full", "dir", "/data")
	ev := waitEvent(t, events, "logs", "disk full")
	if strings.Contains(ev.Data, "polling the inbox") {
		t.Errorf("live logs ignore the level filter:\n%s", ev.Data)
	}
}

// TestLiveStreamsEndOnServerShutdown: with Close registered as the gateway registers it,
// shutting the HTTP server down ends open streams instead of waiting for them.
func TestLiveStreamsEndOnServerShutdown(t *testing.T) {
	b, _ := setupLive(t)
	b.srv.Config.RegisterOnShutdown(b.ui.Close)
	c := b.signedIn(t)
	events := c.stream(t, "/ui/live/messages")
	waitEvent(t, events, "results", "No messages match.")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := b.srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an open stream: %v", err)
	}
}

// panelsFake is a module whose panel has nested fields, a list and a null.
type panelsFake struct{ id int64 }

func (p panelsFake) MessagePanel(_ context.Context, id int64) (any, bool, error) {
	if id != p.id {
		return nil, false, nil
	}
	type record struct {
		AS2MessageID string   `json:"as2_message_id"`
		Layers       []string `json:"layers"`
		Signed       bool     `json:"signed"`
		MDN          *string  `json:"mdn"`
		DuplicateOf  int64    `json:"duplicate_of_message_id"`
	}
	return struct {
		Direction string `json:"direction"`
		Inbound   record `json:"inbound"`
	}{"inbound", record{AS2MessageID: "<abc@partner>", Layers: []string{"encrypted", "signed"}, Signed: true, DuplicateOf: p.id}}, true, nil
}

func TestMessageDetailShowsModulePanels(t *testing.T) {
	ms, _, c := serveWithPanels(t, 2, func(ms []persistence.Message) module.MessagePanels { return panelsFake{ms[0].ID} })

	body := c.get(t, fmt.Sprintf("/ui/messages/%d", ms[0].ID)).body
	for _, want := range []string{
		`<h2 class="card-title" id="protocol-as2-title">AS2</h2>`,
		`<dt>Direction</dt><dd><span class="mono">inbound</span></dd>`,
		`<dt>AS2 message ID</dt><dd><span class="mono">&lt;abc@partner&gt;</span></dd>`,
		`<li><span class="mono">encrypted</span></li>`,
		`<dt>Signed</dt><dd><span class="mono">yes</span></dd>`,
		`<dt>MDN</dt><dd><span class="mono">—</span></dd>`,
		fmt.Sprintf(`<dt>Duplicate of message ID</dt><dd><a class="mono" href="/ui/messages/%d">%d</a></dd>`, ms[0].ID, ms[0].ID),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	if other := c.get(t, fmt.Sprintf("/ui/messages/%d", ms[1].ID)).body; strings.Contains(other, "protocol-as2") {
		t.Errorf("a message the module had no part in shows its panel")
	}
}
