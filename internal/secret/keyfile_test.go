package secret

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

// testLogger captures log output for assertions.
func testLogger(t *testing.T) (*slog.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func b64(fill byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, KeySize))
}

func TestLoadOrCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "secrets.key")
	logger, logged := testLogger(t)

	b1, created, err := LoadOrCreate(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("created = false for a missing file")
	}
	if !strings.Contains(logged.String(), "back it up") || !strings.Contains(logged.String(), path) {
		t.Fatalf("no backup warning naming the file: %s", logged)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Fatalf("key file mode %04o, want 0600", perm)
		}
	}
	sealed, _ := b1.Seal([]byte("totp secret"))

	logged.Reset()
	b2, created, err := LoadOrCreate(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Fatal("created = true for an existing file")
	}
	if b2.CurrentKeyID() != b1.CurrentKeyID() {
		t.Fatalf("reloaded key %q, want %q", b2.CurrentKeyID(), b1.CurrentKeyID())
	}
	if got, err := b2.Open(sealed); err != nil || string(got) != "totp secret" {
		t.Fatalf("open after reload: %q, %v", got, err)
	}
	if logged.Len() != 0 {
		t.Fatalf("loading a private existing file logged: %s", logged)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the key file", len(entries))
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.key")
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a missing file: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("Load created a file")
	}
}

func TestLoadKeyFile(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		wantErr   string // substring; empty means success
		wantIDs   []string
		forbidden string // must not appear in the error
	}{
		{name: "one key", content: "a:" + b64(1) + "\n", wantIDs: []string{"a"}},
		{name: "no trailing newline, CRLF, comments and blanks",
			content: "# rotated 2026-01\r\n\r\nnew:" + b64(2) + "\r\nold:" + b64(1) + "\r\n", wantIDs: []string{"new", "old"}},
		{name: "empty file", content: "", wantErr: "holds no key"},
		{name: "only comments", content: "# nothing\n\n", wantErr: "holds no key"},
		{name: "no colon", content: "a:" + b64(1) + "\n" + b64(2) + "\n", wantErr: "line 2", forbidden: b64(2)},
		{name: "bad base64", content: "a:not*base64!\n", wantErr: "line 1"},
		{name: "short key", content: "a:" + base64.StdEncoding.EncodeToString(make([]byte, 16)) + "\n", wantErr: "line 1"},
		{name: "bad id", content: "a b:" + b64(1) + "\n", wantErr: "line 1", forbidden: b64(1)},
		{name: "duplicate id", content: "a:" + b64(1) + "\n# c\na:" + b64(2) + "\n", wantErr: "line 3: key id \"a\" already used on line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			b, err := Load(path, slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and %q", err, path, tt.wantErr)
				}
				if tt.forbidden != "" && strings.Contains(err.Error(), tt.forbidden) {
					t.Fatalf("error quotes key material: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(b.KeyIDs(), ","); got != strings.Join(tt.wantIDs, ",") {
				t.Fatalf("key ids %s, want %v", got, tt.wantIDs)
			}
			if b.CurrentKeyID() != tt.wantIDs[0] {
				t.Fatalf("current key %s, want %s", b.CurrentKeyID(), tt.wantIDs[0])
			}
		})
	}
}

func TestWriteKeyFileRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.key")
	b1, _, err := LoadOrCreate(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := b1.Seal([]byte("webhook url"))

	// Rotate: read the keys in use, put a new one in front.
	data, _ := os.ReadFile(path)
	old, err := parseKeyFile(path, data)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteKeyFile(path, append([]Key{fresh}, old...)...); err != nil {
		t.Fatal(err)
	}

	b2, err := Load(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if b2.CurrentKeyID() != fresh.ID {
		t.Fatalf("current key %s, want %s", b2.CurrentKeyID(), fresh.ID)
	}
	if got, err := b2.Open(sealed); err != nil || string(got) != "webhook url" {
		t.Fatalf("open old value after rotation: %q, %v", got, err)
	}
	if err := WriteKeyFile(path, fresh, fresh); err == nil {
		t.Fatal("WriteKeyFile accepted a duplicate id")
	}
}
