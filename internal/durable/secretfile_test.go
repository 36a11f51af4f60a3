package durable

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWriteSecretFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	for _, tc := range []struct {
		content string
		replace bool
		won     bool
		want    string
	}{
		{"first", false, true, "first"},
		{"second", false, false, "first"}, // another writer got there first
		{"third", true, true, "third"},
	} {
		won, err := WriteSecretFile(path, []byte(tc.content), tc.replace)
		if err != nil || won != tc.won {
			t.Fatalf("write %q (replace %v) = %v, %v; want won %v", tc.content, tc.replace, won, err, tc.won)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tc.want {
			t.Fatalf("after writing %q: %q, %v; want %q", tc.content, got, err, tc.want)
		}
	}
	if fi, err := os.Stat(path); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Fatalf("mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".key.tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
