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
	"net"
	"net/http"
	"os"
	"os/exec"
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
	return env
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
	in.cmd = exec.Command(in.Bin, "standalone")
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
