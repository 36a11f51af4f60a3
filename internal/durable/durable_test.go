package durable

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSyncCalls(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		call    func() error
		wantErr bool
	}{
		{"directory", func() error { return SyncDir(dir) }, false},
		{"missing directory", func() error { return SyncDir(filepath.Join(dir, "nope")) }, true},
		{"file", func() error { return SyncFile(p) }, false},
		{"missing file", func() error { return SyncFile(filepath.Join(dir, "nope")) }, true},
		{"file system", func() error { return SyncFS(dir) }, !CanSyncFS},
		{"file system of a missing directory", func() error { return SyncFS(filepath.Join(dir, "nope")) }, true},
	}
	for _, tt := range tests {
		if err := tt.call(); (err != nil) != tt.wantErr {
			t.Errorf("%s: error %v, want error: %v", tt.name, err, tt.wantErr)
		}
	}
}
