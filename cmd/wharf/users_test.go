package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/auth/setuplink"
	"wharf/internal/config"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

const testPublicURL = "https://wharf.example.com"

const testPasswordHash = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"

// users runs "wharf users args…" against the data directory dir and returns stdout.
func users(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "--data-dir", dir, "--public-url", testPublicURL, "--log-level", "warn")
	err := runUsers(context.Background(), args, &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return stdout.String(), err
}

// mustUsers is users for a command expected to succeed.
func mustUsers(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := users(t, dir, args...)
	if err != nil {
		t.Fatalf("users %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// withStore opens the data directory's database for fn and closes it after, so the
// command under test and the test never hold it at the same time.
func withStore(t *testing.T, dir string, fn func(s *db.Store)) {
	t.Helper()
	s, err := db.Open(context.Background(), db.Options{SQLitePath: filepath.Join(dir, "wharf.db"), AuditKey: dbtest.AuditKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fn(s)
}

func getUserByName(t *testing.T, dir string, name persistence.UserName) persistence.User {
	t.Helper()
	var u persistence.User
	withStore(t, dir, func(s *db.Store) {
		var err error
		if u, err = s.GetUserByName(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	})
	return u
}

// linkToken checks that the last line of out is a set-up link and returns its token.
func linkToken(t *testing.T, out, prefix string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	token, ok := strings.CutPrefix(last, prefix+testPublicURL+"/ui/setup/")
	if !ok || len(token) != 43 {
		t.Fatalf("last line %q is not a set-up link", last)
	}
	return token
}

// consume uses a set-up token as the set-up page does.
func consume(t *testing.T, dir, token string) (persistence.User, error) {
	t.Helper()
	var u persistence.User
	var err error
	withStore(t, dir, func(s *db.Store) {
		u, err = s.ConsumeUserSetupToken(context.Background(), setuplink.Hash(token), time.Now())
	})
	return u, err
}

// completeSetup gives a user a password and a TOTP secret, as the set-up page does.
func completeSetup(t *testing.T, dir string, name persistence.UserName) {
	t.Helper()
	u := getUserByName(t, dir, name)
	withStore(t, dir, func(s *db.Store) {
		if _, err := s.CompleteUserSetup(context.Background(), u.ID, testPasswordHash, []byte("sealed"), nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUsersCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	before := time.Now()
	out := mustUsers(t, dir, "create", "alice", "--role", "admin")
	token := linkToken(t, out, "")

	u := getUserByName(t, dir, "alice")
	if u.Role != persistence.RoleAdmin || u.SetUp() || u.SetupTokenHash != setuplink.Hash(token) {
		t.Fatalf("user = role %s, set up %v, hash %q; want a pending admin with the link's hash", u.Role, u.SetUp(), u.SetupTokenHash)
	}
	if d := u.SetupExpiresAt.Sub(before); d < setuplink.TTL-time.Minute || d > setuplink.TTL+time.Minute {
		t.Errorf("link valid for %v, want 24h", d)
	}
	if got, err := consume(t, dir, token); err != nil || got.ID != u.ID {
		t.Fatalf("first use = user %d, %v; want user %d", got.ID, err, u.ID)
	}
	if _, err := consume(t, dir, token); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("second use: err = %v, want ErrNotFound", err)
	}

	mustUsers(t, dir, "create", "bob")
	if got := getUserByName(t, dir, "bob").Role; got != persistence.RoleOperator {
		t.Errorf("default role = %s, want operator", got)
	}

	_, err := users(t, dir, "create", "alice")
	if err == nil || !strings.Contains(err.Error(), `user "alice" already exists`) {
		t.Fatalf("duplicate create: err = %v, want already exists", err)
	}
}

func TestUsersCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustUsers(t, dir, "create", "alice")
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no command", nil, true, "users needs create"},
		{"unknown command", []string{"rename", "alice"}, true, `unknown users command "rename"`},
		{"missing name", []string{"create"}, true, "takes 1 argument"},
		{"extra argument", []string{"list", "alice"}, true, "takes 0 argument"},
		{"role on another command", []string{"reset", "alice", "--role", "admin"}, true, "--role applies to users create only"},
		{"unknown role", []string{"create", "bob", "--role", "root"}, true, "root"},
		{"invalid name", []string{"create", "Bob Smith"}, false, "invalid user name"},
		{"unknown user", []string{"disable", "nobody"}, false, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := users(t, dir, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, errUsage) != tt.usage {
				t.Fatalf("err = %v, want %q (usage %v)", err, tt.want, tt.usage)
			}
		})
	}
}

func TestUsersList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"create", "alice", "--role", "admin"}, {"create", "bob"}, {"create", "carol"}, {"create", "dave"},
	} {
		mustUsers(t, dir, args...)
	}
	completeSetup(t, dir, "alice")
	completeSetup(t, dir, "carol")
	mustUsers(t, dir, "disable", "carol")
	dave := getUserByName(t, dir, "dave")
	withStore(t, dir, func(s *db.Store) {
		if err := s.SetUserSetupToken(context.Background(), dave.ID, setuplink.Hash("old"), time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	})

	out := mustUsers(t, dir, "list")
	want := [][]string{
		{"NAME", "ROLE", "STATE", "LAST", "SIGN-IN"},
		{"alice", "admin", "active", "-"},
		{"bob", "operator", "setup", "pending", "-"},
		{"carol", "operator", "disabled", "-"},
		{"dave", "operator", "setup", "expired", "-"},
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("list:\n%s\nwant %d lines", out, len(want))
	}
	for i, line := range lines {
		if got := strings.Fields(line); strings.Join(got, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d = %q, want fields %q", i, line, want[i])
		}
	}
}

func TestUsersLastUser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		others [][]string // users created besides the set-up administrator alice
		args   []string
		refuse bool
	}{
		{"disable the only user", nil, []string{"disable", "alice"}, true},
		{"delete the only user", nil, []string{"delete", "alice"}, true},
		{"disable the only administrator", [][]string{{"create", "bob"}}, []string{"disable", "alice"}, true},
		{"delete the only administrator", [][]string{{"create", "bob"}}, []string{"delete", "alice"}, true},
		{"disable with another administrator", [][]string{{"create", "bob", "--role", "admin"}}, []string{"disable", "alice"}, false},
		{"delete with another administrator", [][]string{{"create", "bob", "--role", "admin"}}, []string{"delete", "alice"}, false},
		{"delete an operator", [][]string{{"create", "bob"}}, []string{"delete", "bob"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mustUsers(t, dir, "create", "alice", "--role", "admin")
			completeSetup(t, dir, "alice")
			for _, args := range tt.others {
				mustUsers(t, dir, args...)
			}
			_, err := users(t, dir, tt.args...)
			if got := errors.Is(err, persistence.ErrLastUser); got != tt.refuse {
				t.Fatalf("err = %v, want refused %v", err, tt.refuse)
			}
			if !tt.refuse && err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestUsersDisableEnable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustUsers(t, dir, "create", "alice", "--role", "admin")
	mustUsers(t, dir, "create", "bob")
	completeSetup(t, dir, "alice")
	completeSetup(t, dir, "bob")
	gen := getUserByName(t, dir, "bob").Generation

	if out := mustUsers(t, dir, "disable", "bob"); !strings.Contains(out, `User "bob" disabled`) {
		t.Errorf("disable printed %q", out)
	}
	if u := getUserByName(t, dir, "bob"); !u.Disabled || u.Generation != gen+1 {
		t.Fatalf("after disable: disabled %v, generation %d; want true, %d", u.Disabled, u.Generation, gen+1)
	}
	if out := mustUsers(t, dir, "enable", "bob"); !strings.Contains(out, `User "bob" enabled`) {
		t.Errorf("enable printed %q", out)
	}
	if u := getUserByName(t, dir, "bob"); u.Disabled {
		t.Fatal("bob is still disabled")
	}
}

func TestUsersSignOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustUsers(t, dir, "create", "alice")
	completeSetup(t, dir, "alice")
	before := getUserByName(t, dir, "alice")
	if out := mustUsers(t, dir, "sign-out", "alice"); !strings.Contains(out, `Every session of "alice" has ended`) {
		t.Errorf("sign-out printed %q", out)
	}
	after := getUserByName(t, dir, "alice")
	if after.Generation != before.Generation+1 {
		t.Fatalf("generation %d → %d, want one more", before.Generation, after.Generation)
	}
}

func TestUsersReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := linkToken(t, mustUsers(t, dir, "create", "alice", "--role", "admin"), "")
	completeSetup(t, dir, "alice")
	before := getUserByName(t, dir, "alice")

	fresh := linkToken(t, mustUsers(t, dir, "reset", "alice"), "")
	after := getUserByName(t, dir, "alice")
	if after.Generation != before.Generation+1 {
		t.Errorf("generation %d → %d, want one more: a reset ends the sessions", before.Generation, after.Generation)
	}
	if !after.SetUp() {
		t.Error("credentials gone before the link is used")
	}
	if _, err := consume(t, dir, old); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("old link: err = %v, want ErrNotFound", err)
	}
	if u, err := consume(t, dir, fresh); err != nil || u.ID != after.ID {
		t.Fatalf("new link = user %d, %v; want user %d", u.ID, err, after.ID)
	}

	// A second reset replaces a link that was never used.
	unused := linkToken(t, mustUsers(t, dir, "reset", "alice"), "")
	latest := linkToken(t, mustUsers(t, dir, "reset", "alice"), "")
	if _, err := consume(t, dir, unused); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("replaced link: err = %v, want ErrNotFound", err)
	}
	if _, err := consume(t, dir, latest); err != nil {
		t.Fatalf("latest link: %v", err)
	}
}

func TestPrintFirstAdminLink(t *testing.T) {
	t.Parallel()
	const prefix = "Create the first administrator: "
	cfg := config.Default()
	cfg.PublicURL = testPublicURL
	first := func(t *testing.T, dir string) string {
		t.Helper()
		var out bytes.Buffer
		withStore(t, dir, func(s *db.Store) {
			if err := printFirstAdminLink(context.Background(), s, cfg, &out, time.Now()); err != nil {
				t.Fatal(err)
			}
		})
		return out.String()
	}

	t.Run("new database", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		out := first(t, dir)
		if strings.Count(out, "\n") != 1 {
			t.Fatalf("printed %q, want one line", out)
		}
		token := linkToken(t, out, prefix)
		admin := getUserByName(t, dir, firstAdminName)
		if admin.Role != persistence.RoleAdmin || admin.SetupTokenHash != setuplink.Hash(token) {
			t.Fatalf("admin = role %s, hash %q; want an admin holding the link", admin.Role, admin.SetupTokenHash)
		}

		// A restart before set-up replaces the link, so a lost one is recovered.
		again := linkToken(t, first(t, dir), prefix)
		if _, err := consume(t, dir, token); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("replaced link: err = %v, want ErrNotFound", err)
		}
		if _, err := consume(t, dir, again); err != nil {
			t.Fatalf("new link: %v", err)
		}

		completeSetup(t, dir, firstAdminName)
		if out := first(t, dir); out != "" {
			t.Fatalf("after set-up printed %q, want nothing", out)
		}
	})

	t.Run("users exist", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustUsers(t, dir, "create", "bob", "--role", "admin")
		if out := first(t, dir); out != "" {
			t.Fatalf("printed %q, want nothing", out)
		}
		withStore(t, dir, func(s *db.Store) {
			if _, total, err := s.ListUsers(context.Background(), persistence.ListOptions{}); err != nil || total != 1 {
				t.Fatalf("users = %d, %v; want only bob", total, err)
			}
		})
	})
}
