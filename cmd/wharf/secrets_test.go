package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/secret"
	"wharf/internal/secret/secrettest"
)

// "wharf secrets rekey" on a gateway's data directory leaves one new key in the key
// file, and the gateway starts on it again.
func TestSecretsRekeyCommand(t *testing.T) {
	t.Parallel()
	dir := seededDir(t)
	path := filepath.Join(dir, "secrets.key")
	before, err := secret.ReadKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"secrets", "rekey", "--data-dir", dir, "--log-level", "warn"}, &stdout, &stderr); code != 0 {
		t.Fatalf("secrets rekey exited %d: %s", code, stderr.String())
	}
	after, err := secret.ReadKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].ID == before[0].ID {
		t.Fatalf("key file holds %v after a rekey from %v, want one new key", after, before)
	}
	if out := stdout.String(); !strings.Contains(out, "under key "+after[0].ID) || !strings.Contains(out, "Back up "+path) {
		t.Errorf("the command says:\n%s", out)
	}
	if out := startWharf(t, dir, "--as2-addr", "127.0.0.1:0"); !strings.HasPrefix(out, "Wharf is running: ") {
		t.Errorf("the gateway after a rekey:\n%s", out)
	}
}

// The command works on what exists: on an empty data directory it refuses and creates
// nothing.
func TestSecretsRekeyNeedsAGateway(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"secrets", "rekey", "--data-dir", dir}, &stdout, &stderr); code == 0 {
		t.Fatal("secrets rekey on an empty data directory succeeded")
	}
	if !strings.Contains(stderr.String(), "secrets key file") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) > 0 {
		t.Errorf("the command created %v", m)
	}
}

// A database no gateway has seeded is refused, and the key file stays as it was.
func TestSecretsRekeyRefusesUnseededDatabase(t *testing.T) {
	for name, u := range dbtest.URLs() {
		t.Run(name, func(t *testing.T) {
			u = dbtest.ResolveURL(t, u)
			dir := t.TempDir()
			key := secrettest.WriteNewKey(t, filepath.Join(dir, "secrets.key"))
			writeFile(t, filepath.Join(dir, "audit.key"), base64.StdEncoding.EncodeToString(dbtest.AuditKey)+"\n")
			s, err := db.Open(context.Background(), db.Options{URL: u, SQLitePath: filepath.Join(dir, "wharf.db"), AuditKey: dbtest.AuditKey})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			args := []string{"secrets", "rekey", "--data-dir", dir, "--log-level", "warn"}
			if u != "" {
				args = append(args, "--db-url", u)
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code == 0 {
				t.Fatal("secrets rekey on an unseeded database succeeded")
			}
			if !strings.Contains(stderr.String(), "holds no gateway's data") {
				t.Errorf("stderr: %s", stderr.String())
			}
			if keys, err := secret.ReadKeys(filepath.Join(dir, "secrets.key")); err != nil || len(keys) != 1 || keys[0].ID != key.ID {
				t.Errorf("the key file changed: %v %v", keys, err)
			}
		})
	}
}
