package events_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"wharf/internal/events"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	_ "wharf/internal/protocol/file"
)

// sse is one server-sent event as a client reads it.
type sse struct {
	id, name, data string
}

// open starts a stream and returns its events as they arrive; the stream ends with the
// test or with cancel.
func open(t *testing.T, ctx context.Context, url, lastEventID string) (<-chan sse, *http.Response) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gatewaytest.Token)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan sse, 1000)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		close(out)
		return out, resp
	}
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.id != "" || cur.name != "" || cur.data != "" {
					out <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, ":"):
				out <- sse{name: "comment", data: line}
			case strings.HasPrefix(line, "id: "):
				cur.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				cur.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				cur.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out, resp
}

// next reads events until n have arrived, failing after a deadline.
func next(t *testing.T, ch <-chan sse, n int) []sse {
	t.Helper()
	var got []sse
	deadline := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended after %d of %d events", len(got), n)
			}
			if e.name != "comment" {
				got = append(got, e)
			}
		case <-deadline:
			t.Fatalf("%d of %d events within 30s: %+v", len(got), n, got)
		}
	}
	return got
}

// expected lists the ids of the history rows of the messages that the filter selects, in
// order.
func expected(t *testing.T, g *gatewaytest.Gateway, ids []int64, patterns []events.Pattern, party persistence.PartyName) []string {
	t.Helper()
	var out []int64
	for _, id := range ids {
		m, err := g.Store.GetMessage(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := g.Store.ListHistory(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			e := events.FromRow(events.Row{ID: h.ID, Kind: h.Kind, FromState: h.FromState, ToState: h.ToState,
				From: string(m.From), To: string(m.To)})
			if events.Selects(patterns, party, e) {
				out = append(out, h.ID)
			}
		}
	}
	slices.Sort(out)
	s := make([]string, len(out))
	for i, id := range out {
		s[i] = strconv.FormatInt(id, 10)
	}
	return s
}

// The event stream: filtered by type and party, resumed after Last-Event-ID with nothing
// repeated or left out, then live; refused without a token or with an unknown type.
func TestEventStream(t *testing.T) {
	for name, url := range dbtest.URLs() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g := gatewaytest.Start(t, gatewaytest.Options{DBURL: url})
			for _, p := range []string{"acme", "globex"} {
				if code, body := g.API("POST", "/api/v1/partners", "application/json", strings.NewReader(`{"name":"`+p+`"}`)); code != http.StatusCreated {
					t.Fatalf("partner: %d %s", code, body)
				}
			}
			var ids []int64
			ingest := func(from string) int64 {
				res, err := g.Dispatcher.Ingest(ctx, []module.Incoming{{Source: "file_poller_default", From: persistence.PartyName(from), To: "local",
					FileName: persistence.FileName(fmt.Sprintf("doc-%d.edi", len(ids))), Body: strings.NewReader("UNB+X'")}})
				if err != nil || res[0].Err != nil {
					t.Fatal(err, res)
				}
				ids = append(ids, res[0].Message.ID)
				return res[0].Message.ID
			}
			ingest("acme")
			ingest("globex")
			ingest("acme")
			patterns := []events.Pattern{events.AllMessages}
			want := expected(t, g, ids, patterns, "acme")
			if len(want) < 4 {
				t.Fatalf("only %d events to stream", len(want))
			}

			base := g.URL() + "/api/v1/events?types=message.*&party=acme"
			first, cancelFirst := context.WithCancel(ctx)
			ch, resp := open(t, first, base+"&after=0", "")
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
				t.Fatalf("stream: %d %s", resp.StatusCode, ct)
			}
			half := len(want) / 2
			got := next(t, ch, half)
			cancelFirst()
			for _, e := range got {
				var body events.Event
				if err := json.Unmarshal([]byte(e.data), &body); err != nil {
					t.Fatal(err)
				}
				if body.Data.From != "acme" || !strings.HasPrefix(string(body.Type), "message.") || e.name != string(body.Type) ||
					strconv.FormatInt(body.Data.EventID, 10) != e.id {
					t.Fatalf("event %+v does not match its filter or its id", e)
				}
			}

			// Resumed after the last event read (Last-Event-ID wins over after): the rest,
			// then live.
			ch, _ = open(t, ctx, base+"&after=0", got[len(got)-1].id)
			got = append(got, next(t, ch, len(want)-half)...)
			var gotIDs []string
			for _, e := range got {
				gotIDs = append(gotIDs, e.id)
			}
			if !slices.Equal(gotIDs, want) {
				t.Fatalf("streamed %v, want %v", gotIDs, want)
			}
			live := ingest("acme")
			wantLive := expected(t, g, []int64{live}, patterns, "acme")
			var liveIDs []string
			for _, e := range next(t, ch, len(wantLive)) {
				liveIDs = append(liveIDs, e.id)
			}
			// The live message's events committed so far arrive first, in order.
			if !slices.Equal(liveIDs, wantLive) {
				t.Fatalf("live events %v, want %v", liveIDs, wantLive)
			}

			for _, bad := range []struct {
				url, token string
				status     int
			}{
				{g.URL() + "/api/v1/events", "", http.StatusUnauthorized},
				{g.URL() + "/api/v1/events?types=message.nope", gatewaytest.Token, http.StatusBadRequest},
				{g.URL() + "/api/v1/events?after=-3", gatewaytest.Token, http.StatusBadRequest},
			} {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, bad.url, nil)
				if bad.token != "" {
					req.Header.Set("Authorization", "Bearer "+bad.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != bad.status {
					t.Errorf("%s: %d, want %d", bad.url, resp.StatusCode, bad.status)
				}
			}
		})
	}
}

// A quiet stream sends heartbeats, and Close ends it.
func TestEventStreamHeartbeatAndClose(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{})
	s := events.NewStream(g.Store.ModuleSQL(), nil)
	s.Heartbeat = 10 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Serve(w, r, events.Query{})
	}))
	defer srv.Close()
	ch, _ := open(t, context.Background(), srv.URL, "")
	deadline := time.After(30 * time.Second)
	for beats := 0; beats < 2; {
		select {
		case e := <-ch:
			if e.name == "comment" && e.data == ": heartbeat" {
				beats++
			}
		case <-deadline:
			t.Fatal("no heartbeats")
		}
	}
	s.Close()
	for range ch { // drains until the server ends the stream
	}
}
