package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// tokens runs "wharf tokens args…" against the data directory dir and returns stdout.
func tokens(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "--data-dir", dir, "--log-level", "warn")
	err := runTokens(context.Background(), args, &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return stdout.String(), err
}

func TestTokensCreateScoped(t *testing.T) {
	dir := t.TempDir()
	withStore(t, dir, func(s *db.Store) {
		for _, c := range []persistence.PluginConfig{
			{Name: "erp_drop", Type: persistence.PluginFileWriter, Enabled: true, Config: []byte(`{}`)},
			{Name: "erp_pickup", Type: persistence.PluginFilePoller, Enabled: true, Config: []byte(`{}`)},
		} {
			if _, err := s.CreatePluginConfig(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
	})
	out, err := tokens(t, dir, "create", "erp-done", "--target", "erp_drop")
	if err != nil || !strings.Contains(out, "only complete and fail deliveries of erp_drop") {
		t.Fatalf("create scoped = %q, %v", out, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "wharf_") {
		t.Fatalf("the token is not on the last line: %q", out)
	}
	if _, err := tokens(t, dir, "create", "ops"); err != nil {
		t.Fatal(err)
	}
	list, err := tokens(t, dir, "list")
	if err != nil || !strings.Contains(list, "SCOPE") {
		t.Fatalf("list = %q, %v", list, err)
	}
	for name, scope := range map[string]string{"erp-done": "target:erp_drop", "ops": "all"} {
		found := false
		for _, line := range strings.Split(list, "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == name {
				found = f[1] == scope
			}
		}
		if !found {
			t.Errorf("list does not show %s with scope %s:\n%s", name, scope, list)
		}
	}

	for _, tt := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"create", "x", "--target", "erp_pickup"}, false, "is a file-poller"},
		{[]string{"create", "x", "--target", "nowhere"}, false, "no plugin instance"},
		{[]string{"list", "--target", "erp_drop"}, true, "--target belongs to tokens create"},
	} {
		_, err := tokens(t, dir, tt.args...)
		if err == nil || errors.Is(err, errUsage) != tt.usage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("tokens %v = %v, want an error with %q (usage %v)", tt.args, err, tt.want, tt.usage)
		}
	}
}
