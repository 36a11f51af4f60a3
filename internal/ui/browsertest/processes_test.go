package browsertest

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/services"
)

// TestAPIProcessShowsPluginProcess: an API process and a plugin process on one
// PostgreSQL database and one external bus. The API's web UI shows the plugin process's
// log (chosen in the selector) and follows it live, shows an alert the plugin process
// raised, and stops and starts an instance the plugin process runs.
func TestAPIProcessShowsPluginProcess(t *testing.T) {
	dist := gatewaytest.StartDistributed(t, dbtest.PostgresURL(t), persistence.PluginFileWriter)
	apiGW, plugGW := dist.API, dist.Plugin
	plugID := plugGW.ProcessID()

	h := &harness{t: t, g: apiGW.Gateway, gw: apiGW, base: apiGW.URL()}
	c, _ := h.signedIn(t, "olga")

	// The selector offers the plugin process; choosing it shows the line it logged when
	// it started its instance, which the API process never logs.
	page := waitBody(t, c, "/ui/logs", `<option value="`+plugID+`"`)
	if !strings.Contains(page, "plugin:file-writer") {
		t.Errorf("the selector does not name the plugin process's roles:\n%s", page)
	}
	if own := c.get(t, "/ui/logs?q=plugin+instance+started").body; strings.Contains(own, "file_writer_default") {
		t.Fatal("the API process's own log has the plugin process's line; the test proves nothing")
	}
	theirs := c.get(t, "/ui/logs?process="+plugID+"&q=plugin+instance+started")
	if theirs.status != http.StatusOK || !strings.Contains(theirs.body, "file_writer_default") {
		t.Fatalf("the plugin process's log = %d, lacks its start line:\n%s", theirs.status, theirs.body)
	}
	if !strings.Contains(theirs.body, `sse-connect="/ui/live/logs?level=debug&amp;process=`+plugID) {
		t.Errorf("the live stream does not follow the chosen process:\n%s", theirs.body)
	}

	// The live stream of the plugin process delivers the line its instance logs when the
	// Services page of the API stops it.
	events := sseStream(t, c, "/ui/live/logs?process="+plugID+"&q=plugin+instance+stopped")
	waitSSE(t, events, "No log lines match.")
	if r := c.post(t, "/ui/services/file-writer/file_writer_default/stop", nil); r.status != http.StatusSeeOther {
		t.Fatalf("stop from the Services page = %d\n%s", r.status, r.body)
	}
	waitSSE(t, events, "file_writer_default")
	if got := plugGW.InstanceState("file_writer_default"); got != services.StateStopped {
		t.Fatalf("after stop the plugin process has the instance %s", got)
	}
	if r := c.post(t, "/ui/services/file-writer/file_writer_default/start", nil); r.status != http.StatusSeeOther {
		t.Fatalf("start from the Services page = %d\n%s", r.status, r.body)
	}
	if got := plugGW.InstanceState("file_writer_default"); got != services.StateRunning {
		t.Fatalf("after start the plugin process has the instance %s", got)
	}
	waitBody(t, c, "/ui/services", `data-state="running"`)

	// An alert raised in the plugin process reaches the API's notifications page, through
	// a notifier instance that a third process runs.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	h.mustJSON("POST", "/api/v1/plugins/configs/notification-webhook", map[string]any{"name": "ops", "url": hook.URL + "/hook", "format": "generic"}, nil)
	notifierGW := dist.StartPlugin(t, persistence.PluginNotificationWebhook)
	h.mustJSON("POST", "/api/v1/services/notification-webhook/ops/start", map[string]any{}, nil)
	if got := notifierGW.InstanceState("ops"); got != services.StateRunning {
		t.Fatalf("the notifier process has the instance %s", got)
	}
	plugGW.Alerts.Raise(alert.Alert{Code: alert.PluginFailed, Severity: alert.SeverityCritical,
		Subject: alert.Subject{Kind: "plugin", Name: "file_writer_default"}, Summary: "Writer lost its disk in the plugin process"})
	waitBody(t, c, "/ui/notifications", "Writer lost its disk in the plugin process")
}

// waitBody polls path until its page holds want, and returns the page.
func waitBody(t *testing.T, c *client, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		body := c.get(t, path).body
		if strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q:\n%s", path, want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sseStream opens a live stream and sends the data of each event it receives.
func sseStream(t *testing.T, c *client, path string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", c.h.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET %s = %d", path, resp.StatusCode)
	}
	out := make(chan string, 16)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var data strings.Builder
		for sc.Scan() {
			line := sc.Text()
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				data.WriteString(strings.TrimPrefix(d, " "))
				data.WriteByte('\n')
				continue
			}
			if line == "" && data.Len() > 0 {
				select {
				case out <- data.String():
				case <-ctx.Done():
					return
				}
				data.Reset()
			}
		}
	}()
	return out
}

// waitSSE waits for an event whose data holds want.
func waitSSE(t *testing.T, events <-chan string, want string) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case data := <-events:
			if strings.Contains(data, want) {
				return
			}
		case <-deadline.C:
			t.Fatalf("no live event showed %q", want)
		}
	}
}
