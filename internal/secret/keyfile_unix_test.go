//go:build !windows

package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadWarnsOnWidePermissions lives outside Windows, where permission bits exist.
func TestLoadWarnsOnWidePermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(path, []byte("a:"+b64(1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	logger, logged := testLogger(t)
	if _, err := Load(path, logger); err != nil {
		t.Fatalf("a group-readable key file should load with a warning: %v", err)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "0644") {
		t.Fatalf("no warning about mode 0644: %s", logged)
	}
	if strings.Contains(logged.String(), b64(1)) {
		t.Fatal("warning logged key material")
	}
}
