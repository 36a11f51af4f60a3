package ui

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"wharf/internal/logging"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// fakeProcessLogs stands in for the bus: process "b2" answers with one record, any other
// process does not answer.
type fakeProcessLogs struct{ wake chan struct{} }

func (fakeProcessLogs) Self() string { return "a1" }

func (fakeProcessLogs) Tail(_ context.Context, id string, min slog.Level, text string, _ int) ([]logging.Entry, error) {
	if id != "b2" {
		return nil, errors.New("no responders")
	}
	e := logging.Entry{Time: time.Unix(0, 0), Level: slog.LevelWarn, Message: "remote record", Attrs: "process=b2"}
	if e.Level < min || !strings.Contains(e.Line(), text) {
		return nil, nil
	}
	return []logging.Entry{e}, nil
}

func (f fakeProcessLogs) Watch(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	return f.wake, func() {}, nil
}

func TestLogsPageOfAnotherProcess(t *testing.T) {
	b := newBundle(t)
	for _, p := range []db.Process{
		{ID: "a1", Host: "api-host", Roles: []string{"api"}, Version: "1.0"},
		{ID: "b2", Host: "plugin-host", Roles: []string{"plugin:file-writer"}, Version: "1.0"},
	} {
		p.StartedAt, p.HeartbeatAt = b.clock.Now(), b.clock.Now()
		if err := b.store.RecordHeartbeat(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	ring := logging.NewRing(100, slog.LevelDebug)
	slog.New(ring.Handler()).Info("local record")
	fake := fakeProcessLogs{wake: make(chan struct{}, 1)}
	s := newServer(t, b, func(d *Deps) {
		d.Logs, d.Processes, d.ProcessLogs = ring, b.store, fake
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	t.Cleanup(s.Close)
	c, _, _ := b.signedIn(t, "alice", persistence.RoleAdmin)

	for _, tc := range []struct {
		query      string
		status     int
		want, dont []string
	}{
		{"", 200, []string{`<option value="" selected>This process</option>`, `<option value="b2">plugin-host (plugin:file-writer) 1.0`, "local record"},
			[]string{"remote record", `<option value="a1"`}},
		{"?process=b2", 200, []string{`<option value="b2" selected>`, "remote record", `sse-connect="/ui/live/logs?level=debug&amp;process=b2"`}, []string{"local record"}},
		{"?process=a1", 200, []string{"local record"}, []string{"remote record"}},
		{"?process=c9", 200, []string{"The process did not answer"}, []string{"No log lines match."}},
		{"?process=b2&level=error", 200, []string{"No log lines match."}, []string{"remote record"}},
		{"?process=B2", 400, []string{"Choose a process from the list."}, nil},
		{"?process=" + strings.Repeat("a", maxProcessID+1), 400, []string{"Choose a process from the list."}, nil},
	} {
		r := c.get(t, "/ui/logs"+tc.query)
		if r.status != tc.status {
			t.Errorf("logs%s = %d, want %d", tc.query, r.status, tc.status)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.body, w) {
				t.Errorf("logs%s lacks %q", tc.query, w)
			}
		}
		for _, d := range tc.dont {
			if strings.Contains(r.body, d) {
				t.Errorf("logs%s shows %q", tc.query, d)
			}
		}
	}

	// The live stream follows the chosen process's wake-ups, not the local ring.
	events := c.stream(t, "/ui/live/logs?process=b2")
	waitEvent(t, events, "logs", "remote record")
	fake.wake <- struct{}{}
	waitEvent(t, events, "logs", "remote record")
}
