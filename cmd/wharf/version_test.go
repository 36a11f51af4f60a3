package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionCommand runs the real binary: a plain build says devel, a release build the
// version the linker set.
func TestVersionCommand(t *testing.T) {
	release := filepath.Join(t.TempDir(), "wharf")
	if out, err := exec.Command("go", "build", "-ldflags", "-X wharf/internal/product.version=9.8.7",
		"-o", release, "wharf/cmd/wharf").CombinedOutput(); err != nil {
		t.Fatalf("build wharf: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		bin, want string
	}{
		{wharfBinary(t), "wharf devel"},
		{release, "wharf 9.8.7"},
	} {
		out, err := exec.Command(tc.bin, "version").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("%s version = %q, %v; want %q", tc.bin, out, err, tc.want)
		}
	}
}
