package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHeartbeatRecordsProcess: a started process is listed in the processes table under
// its holder id, with its host, its roles and this build's version.
func TestHeartbeatRecordsProcess(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			holder, err := os.ReadFile(filepath.Join(h.data, "holder.id"))
			if err != nil {
				t.Fatal(err)
			}
			procs, err := h.g.Store.ListProcesses(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			host, _ := os.Hostname()
			if len(procs) != 1 || procs[0].ID != strings.TrimSpace(string(holder)) || procs[0].Host != host ||
				!slices.Equal(procs[0].Roles, []string{"api", "plugin", "sweeper"}) || procs[0].Version == "" ||
				procs[0].HeartbeatAt.Before(procs[0].StartedAt) {
				t.Fatalf("processes = %+v, want this process under %s", procs, holder)
			}
		})
	}
}
