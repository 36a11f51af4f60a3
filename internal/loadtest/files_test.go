package loadtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"wharf/internal/persistence/db/dbtest"
)

// buildWharf compiles the real binary once per test run.
func buildWharf(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wharf")
	cmd := exec.Command("go", "build", "-o", bin, "wharf/cmd/wharf")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build wharf: %v\n%s", err, out)
	}
	return bin
}

// TestCrashMidRun drops 500 files, kills the gateway with SIGKILL part-way, restarts it,
// and requires every file delivered exactly once with identical bytes and exactly 500
// messages, all delivered — on SQLite and, when configured, on PostgreSQL.
func TestCrashMidRun(t *testing.T) {
	bin := buildWharf(t)
	for name, url := range map[string]string{"sqlite": "", "postgres": ""} {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" {
				url = dbtest.PostgresBaseURL(t)
			}
			var progress testWriter
			progress.t = t
			res, err := RunFiles(context.Background(), FilesOptions{
				N: 500, SizeKiB: 4, Bin: bin, Dir: t.TempDir(), DBURL: url,
				KillAfter: 150, Timeout: 5 * time.Minute, Progress: progress,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Crashes) != 1 {
				t.Fatal("the run finished without the planned kill")
			}
			t.Logf("%s: %d files, %.0f messages/s including the crash and restart", name, res.N, res.PerSecond)
		})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
