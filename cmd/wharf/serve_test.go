package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/bus"
	"wharf/internal/persistence/db/dbtest"
)

// TestServeRefusals: a role process that cannot join an installation stops at once
// with one line naming what to set, and never repeats a credential.
func TestServeRefusals(t *testing.T) {
	t.Parallel()
	pg := os.Getenv("WHARF_TEST_POSTGRES_URL")
	// A reachable bus and a fresh, empty schema, for the refusals past the connections.
	var natsURL, freshDB string
	if pg != "" {
		nats, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{ListenAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nats.Close() })
		natsURL, freshDB = "nats://"+nats.Addr().String(), dbtest.PostgresURL(t)
	}
	// The processes on the one database share their key files, as an installation's do.
	keys := t.TempDir()
	writeKeys(t, keys)
	shared := []string{"WHARF_SECRETS_KEY_FILE=" + filepath.Join(keys, "secrets.key"),
		"WHARF_AUDIT_KEY_FILE=" + filepath.Join(keys, "audit.key"), "WHARF_SESSION_KEY_FILE=" + filepath.Join(keys, "session.key")}
	cases := []struct {
		name     string
		args     []string
		env      []string
		postgres bool // needs PostgreSQL to reach the check
		want     []string
	}{
		{name: "SQLite with an external bus", args: []string{"serve", "api", "--nats", "nats://127.0.0.1:4222"},
			want: []string{"WHARF_DB_URL=postgres://", "SQLite serves one process only"}},
		{name: "no bus", args: []string{"serve", "sweeper", "--listen", "127.0.0.1:0"}, env: []string{"WHARF_DB_URL=postgres://db/wharf"},
			want: []string{"--nats (WHARF_NATS_URL)"}},
		{name: "credentials in the bus URL", args: []string{"serve", "api", "--nats", "nats://wharf:hunter2@127.0.0.1:4222"},
			want: []string{"--nats", "must not hold credentials", "WHARF_NATS_USER"}},
		{name: "user without password", args: []string{"serve", "api", "--nats", "nats://127.0.0.1:4222"},
			env: []string{"WHARF_NATS_USER=wharf"}, want: []string{"WHARF_NATS_USER and WHARF_NATS_PASSWORD"}},
		{name: "standalone on SQLite with an external bus", args: []string{"standalone", "--http-addr", "127.0.0.1:0", "--nats", "nats://127.0.0.1:4222"},
			want: []string{"external bus", "WHARF_DB_URL=postgres://"}},
		{name: "plugin without a type", args: []string{"serve", "plugin", "--nats", "nats://127.0.0.1:4222", "--listen", "127.0.0.1:0"},
			env: []string{"WHARF_DB_URL=postgres://db/wharf"}, want: []string{"serve plugin takes TYPE"}},
		{name: "unreachable bus", args: []string{"serve", "sweeper", "--nats", "nats://127.0.0.1:1", "--listen", "127.0.0.1:0"},
			env: []string{"WHARF_DB_URL=" + pg, "WHARF_NATS_TOKEN=s3cr3t-token"}, postgres: true,
			want: []string{"connect to bus", "check --nats (WHARF_NATS_URL)"}},
		{name: "unknown plugin type", args: []string{"serve", "plugin", "nosuch", "--nats", natsURL, "--listen", "127.0.0.1:0"},
			env: []string{"WHARF_DB_URL=" + freshDB}, postgres: true, want: []string{`plugin type "nosuch"`, "no module provides it"}},
		{name: "no enabled instance of the type", args: []string{"serve", "plugin", "file-writer", "--nats", natsURL, "--listen", "127.0.0.1:0"},
			env: []string{"WHARF_DB_URL=" + freshDB}, postgres: true, want: []string{"file-writer", "no enabled instance to run"}},
		{name: "no instance of that name", args: []string{"serve", "plugin", "file-writer", "inbox", "--nats", natsURL, "--listen", "127.0.0.1:0"},
			env: []string{"WHARF_DB_URL=" + freshDB}, postgres: true, want: []string{"inbox", "no file-writer instance of that name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.postgres {
				dbtest.PostgresBaseURL(t)
			}
			dir := t.TempDir()
			writeKeys(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, wharfBinary(t), append(tc.args, "--data-dir", dir)...)
			env := tc.env
			if tc.postgres {
				env = append(env, shared...)
			}
			cmd.Env = childEnv(env...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
				t.Fatalf("exit = %v, want a failure\nstderr:\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			for _, l := range lines[:len(lines)-1] {
				if strings.HasPrefix(l, "wharf:") {
					t.Errorf("more than one error line:\n%s", stderr.String())
				}
			}
			if !strings.HasPrefix(last, "wharf: ") {
				t.Fatalf("last line %q is not the error\n%s", last, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Errorf("error %q lacks %q", last, w)
				}
			}
			for _, secret := range []string{"hunter2", "s3cr3t-token"} {
				if strings.Contains(stderr.String()+stdout.String(), secret) {
					t.Errorf("output repeats the credential %q", secret)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "holder.id")); tc.name == "unreachable bus" && err == nil {
				t.Error("the process went on to the database before finding the bus unreachable")
			}
		})
	}
}
