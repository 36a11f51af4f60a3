package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver, to change rows as an intruder would
)

// auditCmd runs "wharf audit args…" against the data directory dir.
func auditCmd(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "--data-dir", dir, "--log-level", "warn")
	err := runAudit(context.Background(), args, &stdout, &stderr)
	return stdout.String(), err
}

// TestAuditVerifyAndExport writes events through the CLI, verifies the database and an
// export, then changes a row and deletes another the way someone with database access
// could, and expects verify to name them.
func TestAuditVerifyAndExport(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"alice", "bob", "carol"} {
		mustUsers(t, dir, "create", name, "--role", "admin")
	}
	mustUsers(t, dir, "disable", "bob")

	out, err := auditCmd(t, dir, "verify")
	if err != nil || !strings.Contains(out, "verifies: 4 events") {
		t.Fatalf("verify = %q, %v", out, err)
	}
	export, err := auditCmd(t, dir, "export")
	if err != nil || strings.Count(export, "\n") != 4 || !strings.Contains(export, `"actor":"cli`) {
		t.Fatalf("export = %q, %v", export, err)
	}
	if strings.Contains(export, "setup_token") || strings.Contains(export, "$argon2") {
		t.Errorf("the export holds a credential: %s", export)
	}
	tail, err := auditCmd(t, dir, "export", "--after-id", "2")
	if err != nil || strings.Count(tail, "\n") != 2 || !strings.HasPrefix(tail, `{"id":3,`) {
		t.Fatalf("export --after-id 2 = %q, %v", tail, err)
	}
	for name, content := range map[string]string{"all.jsonl": export, "tail.jsonl": tail} {
		file := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := auditCmd(t, dir, "verify", "--file", file); err != nil || !strings.Contains(out, "verifies") {
			t.Errorf("verify --file %s = %q, %v", name, out, err)
		}
		edited := filepath.Join(t.TempDir(), "edited-"+name)
		if err := os.WriteFile(edited, []byte(strings.Replace(content, `"actor":"cli`, `"actor":"clj`, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := auditCmd(t, dir, "verify", "--file", edited); !errors.Is(err, errAuditFailed) || !strings.Contains(out, "was changed") {
			t.Errorf("verify --file of an edited %s = %q, %v", name, out, err)
		}
	}

	raw, err := sql.Open("sqlite", filepath.Join(dir, "wharf.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		`DROP TRIGGER audit_events_no_update`, `DROP TRIGGER audit_events_no_delete`,
		`UPDATE audit_events SET record_name = 'mallory' WHERE id = 2`,
		`DELETE FROM audit_events WHERE id = 3`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	out, err = auditCmd(t, dir, "verify")
	if !errors.Is(err, errAuditFailed) || !strings.Contains(out, "event 2: hash does not match") ||
		!strings.Contains(out, "event 4: gap: events 3 to 3 are missing") {
		t.Fatalf("verify after tampering = %q, %v", out, err)
	}
	if code := run(context.Background(), []string{"audit", "verify", "--data-dir", dir}, &bytes.Buffer{}, &bytes.Buffer{}); code != 1 {
		t.Errorf("wharf audit verify exits %d on a broken log, want 1", code)
	}
}

func TestAuditCommandLine(t *testing.T) {
	dir := t.TempDir()
	if _, err := auditCmd(t, dir, "verify"); err == nil || !strings.Contains(err.Error(), "no audit key") {
		t.Errorf("verify without a key = %v", err)
	}
	mustUsers(t, dir, "create", "alice")
	for _, args := range [][]string{{}, {"frobnicate"}, {"export", "--after-id", "x"}, {"export", "--file", "f"}, {"verify", "--after-id", "1"}, {"verify", "--file"}} {
		if _, err := auditCmd(t, dir, args...); !errors.Is(err, errUsage) {
			t.Errorf("audit %q = %v, want a usage error", args, err)
		}
	}
}
