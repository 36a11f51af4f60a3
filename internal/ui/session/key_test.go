package session

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestLoadOrCreateKey(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	path := filepath.Join(t.TempDir(), "data", "session.key")

	k1, created, err := LoadOrCreateKey(path, logger)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreateKey = created %v, %v; want a new key", created, err)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("key file mode = %04o, want 0600", perm)
		}
	}
	if got := logs.String(); !strings.Contains(got, path) || !strings.Contains(got, "signs everyone out") {
		t.Errorf("creation log = %q; want the path and that deleting it signs everyone out", got)
	}
	if strings.Contains(logs.String(), base64.StdEncoding.EncodeToString(k1.b[:])) {
		t.Error("creation log shows the key")
	}

	logs.Reset()
	k2, created, err := LoadOrCreateKey(path, logger)
	if err != nil || created {
		t.Fatalf("second LoadOrCreateKey = created %v, %v; want the existing key", created, err)
	}
	if k1.b != k2.b {
		t.Error("second LoadOrCreateKey returned a different key")
	}
	if logs.Len() != 0 {
		t.Errorf("reusing the key logged %q", logs.String())
	}
	if s := k1.String() + k1.GoString(); strings.Contains(s, base64.StdEncoding.EncodeToString(k1.b[:])) {
		t.Errorf("Key prints its material: %s", s)
	}
}

func TestLoadOrCreateKeyRefusesBadFile(t *testing.T) {
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	long := base64.StdEncoding.EncodeToString(make([]byte, 33))
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"too short", func(t *testing.T, path string) { writeFile(t, path, short+"\n") }},
		{"too long", func(t *testing.T, path string) { writeFile(t, path, long+"\n") }},
		{"not base64", func(t *testing.T, path string) { writeFile(t, path, "not a key!\n") }},
		{"empty", func(t *testing.T, path string) { writeFile(t, path, "") }},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "session.key")
			tt.setup(t, path)
			before, _ := os.ReadFile(path)
			_, created, err := LoadOrCreateKey(path, slog.New(slog.DiscardHandler))
			if err == nil || created {
				t.Fatalf("LoadOrCreateKey = created %v, %v; want a refusal", created, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("a refused key file was changed")
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
