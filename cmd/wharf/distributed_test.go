package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"wharf/internal/bus"
	"wharf/internal/logging/logtest"
	"wharf/internal/persistence/db/dbtest"
)

// TestDistributedRoles is issue 16's check: on PostgreSQL and a NATS bus reached over
// TCP, one API process, three plugin processes serving one http-poster target and two
// sweepers, all real child processes. 5,000 messages are sent through the API; one
// plugin process and the active sweeper are SIGKILLed mid-run. Every message reaches the
// receiver, none twice beyond the attempts the killed process had in flight (whose
// outcome it never recorded), and the standby sweeper takes over.
func TestDistributedRoles(t *testing.T) {
	dbtest.PostgresBaseURL(t) // the processes share one PostgreSQL database, or the test is skipped
	const messages = 5000
	const perProcess = 4 // max_concurrent of the target, in each plugin process
	ctx := context.Background()
	dbURL := dbtest.PostgresURL(t)
	nats, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{ListenAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nats.Close() })
	keys := t.TempDir()
	writeKeys(t, keys)
	env := []string{"WHARF_DB_URL=" + dbURL, "WHARF_NATS_URL=nats://" + nats.Addr().String(),
		"WHARF_SECRETS_KEY_FILE=" + filepath.Join(keys, "secrets.key"),
		"WHARF_AUDIT_KEY_FILE=" + filepath.Join(keys, "audit.key"),
		"WHARF_SESSION_KEY_FILE=" + filepath.Join(keys, "session.key"),
		// The processes share the payloads as they would on a network file system.
		"WHARF_PAYLOAD_DIR=" + filepath.Join(keys, "payloads")}

	recv := newCountingReceiver()
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)

	api := startRole(t, env, "serve", "api", "--http-addr", "127.0.0.1:0")
	token := createToken(t, env, api.dir)
	c := &apiClient{t: t, base: "http://" + api.addr, token: token}
	c.call("POST", "/api/v1/partners", `{"name":"acme","display_name":"ACME"}`, 201)
	c.call("POST", "/api/v1/plugins/configs/http-poster",
		fmt.Sprintf(`{"name":"sink","enabled":true,"url":%q,"max_concurrent":%d}`, srv.URL, perProcess), 201)
	// A short lease brings back what the killed process held; a short interval makes the
	// standby's takeover quick.
	c.call("PUT", "/api/v1/settings", `{"lease_duration":"10s","sweep_interval":"500ms"}`, 200)

	var plugins []*roleProc
	for range 3 {
		plugins = append(plugins, startRole(t, env, "serve", "plugin", "http-poster", "sink", "--listen", "127.0.0.1:0"))
	}
	sweepers := []*roleProc{
		startRole(t, env, "serve", "sweeper", "--listen", "127.0.0.1:0"),
		startRole(t, env, "serve", "sweeper", "--listen", "127.0.0.1:0"),
	}
	for _, p := range append(plugins, sweepers...) {
		p.waitReady(t)
	}
	active, standby := whichSweeper(t, sweepers)

	// Send from several clients at once, as an in-house system would.
	var sent atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < messages; i += 8 {
				if err := c.send(fmt.Sprintf("order-%05d.edi", i), fmt.Sprintf("document %d", i)); err != nil {
					errs <- err
					return
				}
				sent.Add(1)
			}
		}()
	}
	// Mid-run: the first plugin process and the active sweeper die without a word.
	waitUntil(t, 2*time.Minute, "a fifth of the messages delivered", func() bool { return recv.distinct() >= messages/5 })
	plugins[0].kill(t)
	active.kill(t)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitUntil(t, 2*time.Minute, "the standby sweeper taking over", func() bool {
		return strings.Contains(standby.stderr.String(), "this process is the active sweeper")
	})
	waitUntil(t, 2*time.Minute, "every message delivered", func() bool { return recv.distinct() == messages })

	repeats := recv.repeats()
	if repeats > perProcess {
		t.Errorf("%d documents arrived twice; at most the %d the killed process had in flight may", repeats, perProcess)
	}
	if m := standby.get(t, "/metrics"); !strings.Contains(m, "wharf_sweep_passes_total ") || strings.Contains(m, "wharf_sweep_passes_total 0\n") {
		t.Errorf("the standby sweeper ran no pass after the takeover")
	}
	// Nothing is left to deliver: every delivery of the target ends delivered. The
	// receiver may hold a document whose outcome died with the killed process; its
	// delivery is recorded once its lease runs out and it is sent again.
	var list struct{ Total int }
	waitUntil(t, 2*time.Minute, "every message delivered in the database", func() bool {
		c.getJSON("/api/v1/messages?status=delivered&limit=1", &list)
		return list.Total == messages
	})
	t.Logf("%d messages sent, %d delivered, %d repeated deliveries of the killed process's in-flight attempts", sent.Load(), recv.distinct(), repeats)
}

// countingReceiver is the in-house system: it counts each document by its idempotency
// key, one per delivery.
type countingReceiver struct {
	mu   sync.Mutex
	seen map[string]int
}

func newCountingReceiver() *countingReceiver { return &countingReceiver{seen: map[string]int{}} }

func (r *countingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	r.seen[req.Header.Get("Idempotency-Key")]++
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *countingReceiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *countingReceiver) repeats() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.seen {
		n += c - 1
	}
	return n
}

// roleProc is one running `wharf serve` child.
type roleProc struct {
	cmd    *exec.Cmd
	dir    string
	addr   string
	stderr *logtest.Buffer
}

// startRole starts `wharf args…` on a data directory of its own and waits for its
// address line.
func startRole(t *testing.T, env []string, args ...string) *roleProc {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(wharfBinary(t), append(args, "--data-dir", dir)...)
	cmd.Env = childEnv(env...)
	p := &roleProc{cmd: cmd, dir: dir, stderr: &logtest.Buffer{}}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", strings.Join(args, " "), p.stderr.String())
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "Listening on http://"); ok {
			p.addr = a
			break
		}
	}
	if p.addr == "" {
		_ = cmd.Wait()
		t.Fatalf("%s ended without an address:\n%s", strings.Join(args, " "), p.stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

func (p *roleProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func (p *roleProc) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (p *roleProc) waitReady(t *testing.T) {
	t.Helper()
	waitUntil(t, time.Minute, p.addr+" ready", func() bool {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// whichSweeper waits until one sweeper holds the lock and the other stands by.
func whichSweeper(t *testing.T, s []*roleProc) (active, standby *roleProc) {
	t.Helper()
	const took, waits = "this process is the active sweeper", "another process is the active sweeper"
	waitUntil(t, time.Minute, "one active sweeper and one standby", func() bool {
		a, b := s[0].stderr.String(), s[1].stderr.String()
		switch {
		case strings.Contains(a, took) && strings.Contains(b, waits):
			active, standby = s[0], s[1]
		case strings.Contains(b, took) && strings.Contains(a, waits):
			active, standby = s[1], s[0]
		}
		return active != nil
	})
	return active, standby
}

func createToken(t *testing.T, env []string, dir string) string {
	t.Helper()
	cmd := exec.Command(wharfBinary(t), "tokens", "create", "distributed-test", "--data-dir", dir)
	cmd.Env = childEnv(env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tokens create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// apiClient calls the API process's REST API with a token.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

func (c *apiClient) do(method, path, ct string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("X-Requested-With", "test")
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	return http.DefaultClient.Do(req)
}

func (c *apiClient) call(method, path, body string, want int) {
	c.t.Helper()
	resp, err := c.do(method, path, "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
}

func (c *apiClient) getJSON(path string, v any) {
	c.t.Helper()
	resp, err := c.do("GET", path, "", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
}

// send sends one document by hand from local to acme, straight to the target.
func (c *apiClient) send(name, content string) error {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range [][2]string{{"from", "local"}, {"to", "acme"}, {"target", "sink"}} {
		_ = mw.WriteField(f[0], f[1])
	}
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write([]byte(content))
	_ = mw.Close()
	resp, err := c.do("POST", "/api/v1/messages", mw.FormDataContentType(), &body)
	if err != nil {
		return fmt.Errorf("send %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("send %s: %d %s", name, resp.StatusCode, b)
	}
	return nil
}
