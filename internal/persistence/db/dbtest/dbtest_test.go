package dbtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// childEnv marks the test binary TestPostgresVariantsReportSkip runs again as its child.
const childEnv = "DBTEST_SKIP_CHILD"

// pickDatabases is what the child process runs: every way a test picks its databases.
func pickDatabases(t *testing.T) {
	t.Run("foreach", func(t *testing.T) {
		dbtest.ForEach(t, func(t *testing.T, s *db.Store) {})
	})
	t.Run("urls", func(t *testing.T) {
		for name, u := range dbtest.URLs() {
			t.Run(name, func(t *testing.T) { dbtest.ResolveURL(t, u) })
		}
	})
	t.Run("base", func(t *testing.T) {
		t.Run("postgres", func(t *testing.T) { dbtest.PostgresBaseURL(t) })
	})
}

// Without the PostgreSQL URL, every PostgreSQL variant shows in the test output as
// skipped and names the variable that would run it, instead of vanishing.
func TestPostgresVariantsReportSkip(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		pickDatabases(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresVariantsReportSkip$", "-test.v", "-test.count=1")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, dbtest.PostgresURLEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child test run: %v\n%s", err, out)
	}
	text := string(out)
	for _, name := range []string{"foreach/postgres", "urls/postgres", "base/postgres"} {
		if skip := "--- SKIP: TestPostgresVariantsReportSkip/" + name + " "; !strings.Contains(text, skip) {
			t.Errorf("no %q in the output:\n%s", skip, text)
		}
		// The reason is logged under the subtest's RUN line.
		_, block, _ := strings.Cut(text, "=== RUN   TestPostgresVariantsReportSkip/"+name+"\n")
		block, _, _ = strings.Cut(block, "=== RUN")
		if !strings.Contains(block, dbtest.PostgresURLEnv) {
			t.Errorf("%s: the skip does not name %s:\n%s", name, dbtest.PostgresURLEnv, text)
		}
	}
	for _, name := range []string{"foreach/sqlite", "urls/sqlite"} {
		if pass := "--- PASS: TestPostgresVariantsReportSkip/" + name; !strings.Contains(text, pass) {
			t.Errorf("no %q in the output:\n%s", pass, text)
		}
	}
}
