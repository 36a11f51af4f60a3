package config

import (
	"flag"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// newCommand mimics a subcommand: the environment, the global flags it wants, and a bool
// flag of its own.
func newCommand(t *testing.T, env []string, globals ...string) (*Config, *flag.FlagSet, *bool) {
	t.Helper()
	c, err := FromEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs, globals...)
	force := fs.Bool("force", false, "a command's own flag")
	return &c, fs, force
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantPos   []string
		wantDir   string
		wantForce bool
		wantErr   string
	}{
		{name: "flags after positionals", args: []string{"create", "ci", "--data-dir", "./x"}, wantPos: []string{"create", "ci"}, wantDir: "./x"},
		{name: "flags between positionals", args: []string{"--data-dir", "./x", "create", "ci"}, wantPos: []string{"create", "ci"}, wantDir: "./x"},
		{name: "flag in the middle", args: []string{"create", "-data-dir=./y", "--force", "ci"}, wantPos: []string{"create", "ci"}, wantDir: "./y", wantForce: true},
		{name: "no arguments", args: nil, wantPos: nil, wantDir: DefaultDataDir},
		{name: "double dash ends flags", args: []string{"create", "--", "--data-dir", "-x"}, wantPos: []string{"create", "--data-dir", "-x"}, wantDir: DefaultDataDir},
		{name: "double dash after a bool flag", args: []string{"--force", "--", "--force"}, wantPos: []string{"--force"}, wantDir: DefaultDataDir, wantForce: true},
		{name: "double dash as a flag's value", args: []string{"--data-dir", "--", "create"}, wantPos: []string{"create"}, wantDir: "--"},
		{name: "value that looks like a flag, then the terminator", args: []string{"--data-dir", "--force", "--", "--force"}, wantPos: []string{"--force"}, wantDir: "--force"},
		{name: "lone dash is positional", args: []string{"export", "-"}, wantPos: []string{"export", "-"}, wantDir: DefaultDataDir},
		{name: "unregistered global flag", args: []string{"create", "--nats", "nats://x:4222"}, wantErr: "flag provided but not defined: -nats"},
		{name: "missing value", args: []string{"create", "--data-dir"}, wantErr: "needs an argument"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: "log-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fs, force := newCommand(t, nil, "data-dir", "log-level")
			pos, err := ParseArgs(fs, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pos, tt.wantPos) {
				t.Errorf("positionals %q, want %q", pos, tt.wantPos)
			}
			if c.DataDir != tt.wantDir {
				t.Errorf("data dir %q, want %q", c.DataDir, tt.wantDir)
			}
			if *force != tt.wantForce {
				t.Errorf("force %v, want %v", *force, tt.wantForce)
			}
		})
	}
}

func TestPrecedence(t *testing.T) {
	env := []string{"WHARF_DATA_DIR=/from/env", "WHARF_LOG_LEVEL=error", "WHARF_NATS_URL=nats://env:4222"}
	tests := []struct {
		name      string
		env       []string
		args      []string
		wantDir   string
		wantLevel slog.Level
		wantNATS  string
		wantAddr  string
	}{
		{name: "default", args: nil, wantDir: DefaultDataDir, wantLevel: slog.LevelInfo, wantAddr: DefaultHTTPAddr},
		{name: "env over default", env: env, wantDir: "/from/env", wantLevel: slog.LevelError, wantNATS: "nats://env:4222", wantAddr: DefaultHTTPAddr},
		{name: "flag over env", env: env, args: []string{"--data-dir", "/from/flag", "--log-level", "debug", "--nats", "tls://flag:4222", "--http-addr", ":9090"},
			wantDir: "/from/flag", wantLevel: slog.LevelDebug, wantNATS: "tls://flag:4222", wantAddr: ":9090"},
		{name: "flag over default", args: []string{"--log-level=warn"}, wantDir: DefaultDataDir, wantLevel: slog.LevelWarn, wantAddr: DefaultHTTPAddr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fs, _ := newCommand(t, tt.env, GlobalFlags...)
			if _, err := ParseArgs(fs, append([]string{"serve"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if c.DataDir != tt.wantDir || c.LogLevel != tt.wantLevel || c.NATSURL != tt.wantNATS || c.HTTPAddr != tt.wantAddr {
				t.Fatalf("got dir %q level %v nats %q addr %q", c.DataDir, c.LogLevel, c.NATSURL, c.HTTPAddr)
			}
		})
	}
}

func TestFlagDefaultsShowEnvironment(t *testing.T) {
	_, fs, _ := newCommand(t, []string{"WHARF_DATA_DIR=/from/env", "WHARF_LOG_LEVEL=debug"}, "data-dir", "log-level")
	if got := fs.Lookup("data-dir").DefValue; got != "/from/env" {
		t.Errorf("data-dir default shown as %q", got)
	}
	if got := fs.Lookup("log-level").DefValue; got != "debug" {
		t.Errorf("log-level default shown as %q", got)
	}
	if fs.Lookup("db-url") != nil {
		t.Error("a flag that was not asked for is registered")
	}
}

func TestValidateNamesFlags(t *testing.T) {
	c, fs, _ := newCommand(t, []string{"WHARF_PUBLIC_URL=https://edi.example.com"}, GlobalFlags...)
	args := []string{"--db-url", "mysql://root:hunter2@db/x", "--http-addr", "nope", "--data-dir", "", "--nats", "http://n:4222", "--as2-addr", ":8081"}
	if _, err := ParseArgs(fs, args); err != nil {
		t.Fatal(err)
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("bad flags validated")
	}
	for _, want := range []string{"--db-url: must be a postgres://", "--http-addr:", "--data-dir: must not be empty", "--nats: must be nats://", "--as2-addr:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "WHARF_") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error names a variable that was not set or repeats a credential: %q", err)
	}
}

func TestRegisterUnknownFlagPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registering an unknown global flag did not panic")
		}
	}()
	c := Default()
	c.RegisterFlags(flag.NewFlagSet("x", flag.ContinueOnError), "datadir")
}
