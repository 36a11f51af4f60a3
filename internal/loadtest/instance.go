// Package loadtest runs a real standalone Wharf process in a throwaway directory and
// measures it from the outside: the load test command and the crash tests use it.
package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Instance is a wharf standalone child process.
type Instance struct {
	Bin     string
	DataDir string
	Addr    string
	DBURL   string
	Token   string
	// Args are the command the process runs: `standalone` when empty, else a role of a
	// distributed installation (`serve plugin http-poster`); Env is added to its
	// environment (the bus, a probe address, shared key files, the AWS credential chain
	// of a run on S3).
	Args []string
	Env  []string

	cmd    *exec.Cmd
	logs   *lockedBuffer
	waited chan struct{}
	state  *os.ProcessState
}

// NewInstance prepares an instance in dataDir on a free loopback port.
func NewInstance(bin, dataDir, dbURL string) (*Instance, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return &Instance{Bin: bin, DataDir: dataDir, Addr: addr, DBURL: dbURL, logs: &lockedBuffer{}}, nil
}

func (in *Instance) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WHARF_") {
			env = append(env, kv)
		}
	}
	env = append(env, "WHARF_DATA_DIR="+in.DataDir, "WHARF_HTTP_ADDR="+in.Addr, "WHARF_LOG_LEVEL=warn")
	if in.DBURL != "" {
		env = append(env, "WHARF_DB_URL="+in.DBURL)
	}
	return append(env, in.Env...)
}

// CreateToken runs `wharf tokens create` and keeps the token for API calls.
func (in *Instance) CreateToken(ctx context.Context, name string) error {
	cmd := exec.CommandContext(ctx, in.Bin, "tokens", "create", name)
	cmd.Env = in.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("wharf tokens create: %w: %s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	in.Token = strings.TrimSpace(lines[len(lines)-1])
	return nil
}

// Start launches the process and waits until its API answers.
func (in *Instance) Start(ctx context.Context) error {
	args := in.Args
	if len(args) == 0 {
		args = []string{"standalone"}
	}
	in.cmd = exec.Command(in.Bin, args...)
	in.cmd.Env = in.env()
	in.cmd.Stdout, in.cmd.Stderr = in.logs, in.logs
	if err := in.cmd.Start(); err != nil {
		return fmt.Errorf("start wharf: %w", err)
	}
	in.waited = make(chan struct{})
	go func() {
		_ = in.cmd.Wait()
		in.state = in.cmd.ProcessState
		close(in.waited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-in.waited:
			return fmt.Errorf("wharf exited during start-up: %s", in.Logs())
		default:
		}
		resp, err := http.Get("http://" + in.Addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			in.Kill()
			return fmt.Errorf("wharf did not answer within 60s: %s", in.Logs())
		}
		select {
		case <-ctx.Done():
			in.Kill()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill ends the process with SIGKILL, as a crash would.
func (in *Instance) Kill() {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	_ = in.cmd.Process.Signal(syscall.SIGKILL)
	<-in.waited
}

// Stop asks the process to stop with SIGTERM and returns its resource usage.
func (in *Instance) Stop(timeout time.Duration) (*os.ProcessState, error) {
	if in.cmd == nil || in.cmd.Process == nil {
		return nil, errors.New("not started")
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.waited:
	case <-time.After(timeout):
		in.Kill()
		return in.state, fmt.Errorf("wharf did not stop within %s", timeout)
	}
	if !in.state.Success() {
		return in.state, fmt.Errorf("wharf exited with %s: %s", in.state, in.Logs())
	}
	return in.state, nil
}

// Logs returns what the process wrote so far.
func (in *Instance) Logs() string { return in.logs.String() }

// API calls the REST API with the instance's token. A non-2xx answer is an error.
func (in *Instance) API(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+in.Addr+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+in.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// Upload posts one file as the multipart field "file", as the certificate upload takes
// it. A non-2xx answer is an error.
func (in *Instance) Upload(ctx context.Context, path, fileName string, data []byte, out any) error {
	return in.PostForm(ctx, http.DefaultClient, path, nil, fileName, data, out)
}

// PostForm posts a multipart form through client: the text fields in their order, then
// data as the file field "file". A non-2xx answer is an error.
func (in *Instance) PostForm(ctx context.Context, client *http.Client, path string, fields [][2]string, fileName string, data []byte, out any) error {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return err
		}
	}
	fw, err := mw.CreateFormFile("file", fileName)
	if err != nil {
		return err
	}
	if _, err := fw.Write(data); err != nil {
		return err
	}
	if err := mw.Close(); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+in.Addr+path, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+in.Token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Requested-With", "wharf")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(answer))
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("POST %s: decode answer: %w", path, err)
		}
	}
	return nil
}

// Fetch GETs a path with the instance's token and returns the status and body whatever
// the status, for callers that tell answers apart (a 404 probe, a payload download).
func (in *Instance) Fetch(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+in.Addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+in.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return resp.StatusCode, data, nil
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, which Linux fixes at
// 100 for user space whatever the kernel's own tick.
const userHZ = 100

// CPU returns the user and system CPU time the running process used so far, from
// /proc/<pid>/stat: rusage only tells it once the process has exited.
func (in *Instance) CPU() (time.Duration, error) {
	if in.cmd == nil || in.cmd.Process == nil {
		return 0, errors.New("not started")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", in.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	// The command name in parentheses may hold spaces; the fields after it do not.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("read CPU time: unexpected /proc stat format")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("read CPU time: unexpected /proc stat format")
	}
	// Fields 14 and 15 of stat(5), utime and stime, are the 12th and 13th after the name.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// PeakRSS returns the running process's peak resident set size in bytes (VmHWM).
func (in *Instance) PeakRSS() (int64, error) {
	if in.cmd == nil || in.cmd.Process == nil {
		return 0, errors.New("not started")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", in.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("read peak RSS: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		v, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read peak RSS: %w", err)
		}
		return kib << 10, nil
	}
	return 0, errors.New("read peak RSS: no VmHWM in /proc status")
}

// ResetPeakRSS starts a new peak RSS measurement from the current RSS, so a peak can be
// told per phase of a run (clear_refs, Linux 4.0 and later).
func (in *Instance) ResetPeakRSS() error {
	if in.cmd == nil || in.cmd.Process == nil {
		return errors.New("not started")
	}
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", in.cmd.Process.Pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("reset peak RSS: %w", err)
	}
	return nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep the tail only: a long run must not grow memory without bound.
	if b.buf.Len() > 1<<20 {
		rest := b.buf.Bytes()[b.buf.Len()-(1<<19):]
		b.buf = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// pollFast makes the instance's file poller look every 20 ms and take a file as soon as
// it is there: the load test renames whole files into the outbox, and a poller's usual
// pace would be the figure measured.
func (in *Instance) pollFast(ctx context.Context) error {
	const poller = "/api/v1/plugins/configs/file-poller/file_poller_default"
	var cfg map[string]any
	if err := in.API(ctx, "GET", poller, nil, &cfg); err != nil {
		return err
	}
	cfg["interval"] = "20ms"
	cfg["stable_for"] = "0s"
	if err := in.API(ctx, "PUT", poller, cfg, nil); err != nil {
		return err
	}
	return in.API(ctx, "POST", "/api/v1/services/file-poller/file_poller_default/restart", map[string]any{}, nil)
}

// shortLeases makes a delivery a killed process held due again ten seconds after its
// last renewal, and the sweep look every second, so a run does not wait out the
// product's minute-long lease after a kill.
func (in *Instance) shortLeases(ctx context.Context) error {
	return in.API(ctx, "PUT", "/api/v1/settings", map[string]string{"lease_duration": "10s", "sweep_interval": "1s"}, nil)
}
