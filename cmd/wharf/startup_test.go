package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wharf/internal/secret/secrettest"
)

// The real binary, built once for the tests that run it.
var (
	wharfOnce sync.Once
	wharfBin  string
	wharfErr  error
)

func wharfBinary(t *testing.T) string {
	t.Helper()
	wharfOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wharf-bin-")
		if err != nil {
			wharfErr = err
			return
		}
		wharfBin = filepath.Join(dir, "wharf")
		if out, err := exec.Command("go", "build", "-o", wharfBin, "wharf/cmd/wharf").CombinedOutput(); err != nil {
			wharfErr = fmt.Errorf("build wharf: %v\n%s", err, out)
		}
	})
	if wharfErr != nil {
		t.Fatal(wharfErr)
	}
	return wharfBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if wharfBin != "" {
		os.RemoveAll(filepath.Dir(wharfBin))
	}
	os.Exit(code)
}

// childEnv is the test's environment without WHARF_ variables, so the child reads only
// what a case gives it.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WHARF_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// writeKeys puts valid secrets, audit and session key files into dir, so a start logs
// nothing about generating them.
func writeKeys(t *testing.T, dir string) {
	t.Helper()
	secrettest.WriteNewKey(t, filepath.Join(dir, "secrets.key"))
	for _, name := range []string{"audit.key", "session.key"} {
		writeFile(t, filepath.Join(dir, name), base64.StdEncoding.EncodeToString(randomBytes(32))+"\n")
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// replaceWithDir makes a key file unreadable in a way root cannot read past either.
func replaceWithDir(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

// child is a running "wharf standalone" and the lines of its stdout.
type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *bytes.Buffer
}

// launch starts "wharf standalone" on dir with args; it is stopped when the test ends.
func launch(t *testing.T, dir string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(wharfBinary(t), append([]string{"standalone", "--data-dir", dir, "--http-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = childEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 64), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// waitFor reads stdout until a line starting with prefix and returns what it read.
func (c *child) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	var out strings.Builder
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("wharf ended before printing %q:\n%s\nstderr:\n%s", prefix, out.String(), c.stderr.String())
			}
			out.WriteString(line + "\n")
			if strings.HasPrefix(line, prefix) {
				return out.String()
			}
		case <-deadline:
			t.Fatalf("no %q within the deadline:\n%s", prefix, out.String())
		}
	}
}

// stop ends the child with SIGTERM and requires a clean exit.
func (c *child) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range c.lines { // until the process closes its stdout
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("wharf exited with %v\n%s", err, c.stderr.String())
	}
}

// startWharf runs "wharf standalone" on dir and returns its start-up summary (up to the
// line that names how to create a token).
func startWharf(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := launch(t, dir, args...)
	out := c.waitFor(t, "Create an API token")
	go func() {
		for range c.lines {
		}
	}()
	return out
}

// seededDir is a data directory a gateway seeded and stopped cleanly, to copy from.
func seededDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeKeys(t, dir)
	c := launch(t, dir, "--as2-addr", "127.0.0.1:0")
	// The last line of a first start; a stop before it would end the start-up instead.
	c.waitFor(t, "Create the first administrator")
	c.stop(t)
	return dir
}

// copyDir copies a data directory, files only.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, fi.Mode().Perm())
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// Every way a start can fail on its configuration or environment ends with one line on
// stderr that names the problem and the fix, and a non-zero exit: no panic, no
// goroutine dump, no line of log before it.
func TestStartupFailuresAreOneLine(t *testing.T) {
	t.Parallel()
	seeded := seededDir(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the parallel subtests, which run once this function returns.
	t.Cleanup(func() { taken.Close() })

	cases := []struct {
		name string
		// setup prepares a data directory and returns it with the arguments to start on it.
		setup func(t *testing.T) (dir string, args []string)
		want  []string
		after func(t *testing.T, dir string)
	}{
		{name: "unreachable database",
			setup: func(t *testing.T) (string, []string) {
				dir := t.TempDir()
				writeKeys(t, dir)
				return dir, []string{"--db-url", "postgres://wharf@127.0.0.1:1/wharf?sslmode=disable&connect_timeout=5"}
			},
			want: []string{"open database", "127.0.0.1", "check --db-url (WHARF_DB_URL)"}},
		// Without sslmode the driver tries twice and reports each try on a line of its own.
		{name: "unreachable database, two attempts",
			setup: func(t *testing.T) (string, []string) {
				dir := t.TempDir()
				writeKeys(t, dir)
				return dir, []string{"--db-url", "postgres://wharf@127.0.0.1:1/wharf?connect_timeout=5"}
			},
			want: []string{"open database", "127.0.0.1", "check --db-url (WHARF_DB_URL)"}},
		{name: "bad database URL",
			setup: func(t *testing.T) (string, []string) {
				return t.TempDir(), []string{"--db-url", "mysql://wharf:hunter2@db/wharf"}
			},
			want: []string{"--db-url", "postgres://"}},
		{name: "bad listen address",
			setup: func(t *testing.T) (string, []string) {
				dir := t.TempDir()
				writeKeys(t, dir)
				return dir, []string{"--http-addr", "192.0.2.1:8080"}
			},
			want: []string{"listen on 192.0.2.1:8080", "--http-addr (WHARF_HTTP_ADDR)"}},
		{name: "listen address taken",
			setup: func(t *testing.T) (string, []string) {
				dir := t.TempDir()
				writeKeys(t, dir)
				return dir, []string{"--http-addr", taken.Addr().String()}
			},
			want: []string{"listen on " + taken.Addr().String(), "address already in use", "--http-addr"}},
		{name: "data directory is a file",
			setup: func(t *testing.T) (string, []string) {
				f := filepath.Join(t.TempDir(), "data")
				writeFile(t, f, "not a directory")
				return f, nil
			},
			want: []string{"data directory", "not a directory", "--data-dir (WHARF_DATA_DIR)"}},
		{name: "data directory under a file",
			setup: func(t *testing.T) (string, []string) {
				f := filepath.Join(t.TempDir(), "file")
				writeFile(t, f, "x")
				return filepath.Join(f, "data"), nil
			},
			want: []string{"create data directory", "--data-dir"}},
		{name: "schema newer than the binary",
			setup: func(t *testing.T) (string, []string) {
				dir := copyDir(t, seeded)
				db, err := sql.Open("sqlite", filepath.Join(dir, "wharf.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(`INSERT INTO schema_version (version, applied_at) VALUES (999, '2030-01-01T00:00:00.000000Z')`); err != nil {
					t.Fatal(err)
				}
				return dir, nil
			},
			want: []string{"schema is version 999", "run a newer wharf"}},
		{name: "wrong secrets key",
			setup: func(t *testing.T) (string, []string) {
				dir := copyDir(t, seeded)
				secrettest.WriteNewKey(t, filepath.Join(dir, "secrets.key"))
				return dir, nil
			},
			want: []string{"the secrets key does not open this database's sealed values", "WHARF_SECRETS_KEY_FILE"}},
		{name: "secrets key missing beside a database",
			setup: func(t *testing.T) (string, []string) {
				dir := copyDir(t, seeded)
				if err := os.Remove(filepath.Join(dir, "secrets.key")); err != nil {
					t.Fatal(err)
				}
				return dir, nil
			},
			// The key generated for want of one says so on its own log line; the
			// failure itself is still one line.
			want: []string{"does not open this database's sealed values", "the one generated meanwhile is removed"},
			after: func(t *testing.T, dir string) {
				if _, err := os.Stat(filepath.Join(dir, "secrets.key")); !os.IsNotExist(err) {
					t.Errorf("the generated secrets key file is left in place: %v", err)
				}
			}},
	}
	for _, key := range []struct{ file, env string }{
		{"secrets.key", "WHARF_SECRETS_KEY_FILE"}, {"audit.key", "WHARF_AUDIT_KEY_FILE"}, {"session.key", "WHARF_SESSION_KEY_FILE"},
	} {
		short := base64.StdEncoding.EncodeToString(randomBytes(16)) + "\n"
		if key.file == "secrets.key" {
			short = "20260101-short:" + short
		}
		for _, bad := range []struct {
			what  string
			write func(t *testing.T, path string)
			want  string
		}{
			{"unreadable", replaceWithDir, "is a directory"},
			{"short", func(t *testing.T, path string) { writeFile(t, path, short) }, "16 bytes, want 32"},
			{"garbled", func(t *testing.T, path string) { writeFile(t, path, "this is not a key\n") }, key.file},
		} {
			cases = append(cases, struct {
				name  string
				setup func(t *testing.T) (dir string, args []string)
				want  []string
				after func(t *testing.T, dir string)
			}{
				name: bad.what + " " + key.file,
				setup: func(t *testing.T) (string, []string) {
					dir := t.TempDir()
					writeKeys(t, dir)
					bad.write(t, filepath.Join(dir, key.file))
					return dir, nil
				},
				want: []string{key.file, bad.want, key.env},
			})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, args := tc.setup(t)
			// A start that wrongly succeeds is killed rather than left running.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, wharfBinary(t), append([]string{"standalone", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--as2-addr", "127.0.0.1:0"}, args...)...)
			cmd.Env = childEnv()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("exit: %v, want a non-zero exit\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			text := stderr.String()
			if strings.Contains(text, "panic") || strings.Contains(text, "goroutine ") {
				t.Fatalf("stderr shows a panic:\n%s", text)
			}
			lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
			last := lines[len(lines)-1]
			if tc.after == nil && len(lines) != 1 {
				t.Errorf("stderr has %d lines, want one:\n%s", len(lines), text)
			}
			if !strings.HasPrefix(last, "wharf: ") {
				t.Errorf("the failure line %q does not start with \"wharf: \"", last)
			}
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Errorf("the failure line does not say %q:\n%s", w, last)
				}
			}
			if strings.Contains(text, "hunter2") {
				t.Errorf("stderr repeats a password:\n%s", text)
			}
			if tc.after != nil {
				tc.after(t, dir)
			}
		})
	}
}

// A plugin instance that cannot start is named in the start-up summary with its reason,
// and --as2-addr places the default AS2 receiver of a new database.
func TestStartupSummaryNamesServices(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the parallel subtests, which run once this function returns.
	t.Cleanup(func() { taken.Close() })
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()

	t.Run("as2 port taken", func(t *testing.T) {
		t.Parallel()
		out := startWharf(t, t.TempDir(), "--as2-addr", taken.Addr().String())
		if !strings.Contains(out, "with 1 of its services failed") {
			t.Errorf("the headline hides the failure:\n%s", out)
		}
		want := "FAILED as2_receiver_default (as2-receiver): "
		i := strings.Index(out, want)
		if i < 0 {
			t.Fatalf("the summary does not name the failed receiver:\n%s", out)
		}
		line, _, _ := strings.Cut(out[i:], "\n")
		if !strings.Contains(line, taken.Addr().String()) || !strings.Contains(line, "address already in use") {
			t.Errorf("the failed receiver's line does not say why: %s", line)
		}
	})
	t.Run("as2 address set", func(t *testing.T) {
		t.Parallel()
		out := startWharf(t, t.TempDir(), "--as2-addr", freeAddr)
		if want := "as2_receiver_default (as2-receiver) listens on " + freeAddr + " (http)"; !strings.Contains(out, want) {
			t.Errorf("the summary does not say %q:\n%s", want, out)
		}
		if strings.Contains(out, "FAILED") || !strings.HasPrefix(out, "Wharf is running: ") {
			t.Errorf("a start without failures reads:\n%s", out)
		}
	})
}
