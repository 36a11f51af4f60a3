// Package dbtest gives tests of any package fresh, empty stores: SQLite in a temporary
// directory always, and PostgreSQL when WHARF_TEST_POSTGRES_URL is set, each PostgreSQL
// store in a schema of its own that is dropped when the test ends, so tests can run in
// parallel and reruns start clean.
//
// Typical use runs one test body against every available database:
//
//	func TestSomething(t *testing.T) {
//		dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
//			t.Parallel() // optional: every store is independent
//			…
//		})
//	}
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for schema set-up

	"wharf/internal/persistence/db"
)

// AuditKey keys the audit chain of every store dbtest opens; tests that verify the
// chain themselves use it.
var AuditKey = []byte("wharf-test-audit-key-32-bytes!!!")

// PostgresURLEnv names the variable holding the PostgreSQL URL tests may use; without
// it, PostgreSQL tests are skipped.
const PostgresURLEnv = "WHARF_TEST_POSTGRES_URL"

// Dialects lists the databases tests run against: "sqlite" and "postgres". Both are
// always listed, so a PostgreSQL variant without PostgresURLEnv shows in the test output
// as skipped, naming the variable, rather than not at all.
func Dialects() []string {
	return []string{db.DialectSQLite, db.DialectPostgres}
}

// FreshPostgres stands for "a fresh PostgreSQL schema" where a test names the database
// of a whole gateway by URL before its subtest runs; ResolveURL turns it into one inside
// the subtest, so the variant is skipped there, naming PostgresURLEnv, when unset.
const FreshPostgres = "dbtest:fresh-postgres"

// URLs names the database of each dialect by the URL a whole gateway opens: "" (SQLite in
// its data directory) and FreshPostgres.
func URLs() map[string]string {
	return map[string]string{db.DialectSQLite: "", db.DialectPostgres: FreshPostgres}
}

// ResolveURL returns u, or for FreshPostgres the URL of a new schema (PostgresURL).
func ResolveURL(tb testing.TB, u string) string {
	tb.Helper()
	if u == FreshPostgres {
		return PostgresURL(tb)
	}
	return u
}

// PostgresBaseURL returns PostgresURLEnv as set, for tests that hand the database itself
// to a child process, or skips the test naming the variable.
func PostgresBaseURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(PostgresURLEnv)
	if base == "" {
		skipNoPostgres(tb)
	}
	return base
}

// skipNoPostgres skips a PostgreSQL variant and says what would run it.
func skipNoPostgres(tb testing.TB) {
	tb.Helper()
	tb.Skipf("PostgreSQL variant not run: set %s to a PostgreSQL URL (e.g. postgres://user@127.0.0.1:5432/db?sslmode=disable) to run it", PostgresURLEnv)
}

// ForEach runs fn as a subtest named after each available dialect, with a fresh store.
func ForEach(t *testing.T, fn func(t *testing.T, s *db.Store)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(d, func(t *testing.T) {
			fn(t, Open(t, d))
		})
	}
}

// ForEachModules is ForEach with the modules' tables applied as well.
func ForEachModules(t *testing.T, mods []db.ModuleSchema, fn func(t *testing.T, s *db.Store)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(d, func(t *testing.T) {
			fn(t, OpenModules(t, d, mods))
		})
	}
}

// OpenModules is Open with the modules' tables applied as well.
func OpenModules(tb testing.TB, dialect string, mods []db.ModuleSchema) *db.Store {
	tb.Helper()
	switch dialect {
	case db.DialectSQLite:
		return sqliteWith(tb, mods)
	case db.DialectPostgres:
		return postgresWith(tb, mods)
	default:
		tb.Fatalf("dbtest: unknown dialect %q", dialect)
		return nil
	}
}

// Open returns a fresh store of the dialect ("sqlite" or "postgres"), closed and removed
// when the test ends. It skips the test for "postgres" when PostgresURLEnv is not set.
func Open(tb testing.TB, dialect string) *db.Store {
	tb.Helper()
	switch dialect {
	case db.DialectSQLite:
		return SQLite(tb)
	case db.DialectPostgres:
		return Postgres(tb)
	default:
		tb.Fatalf("dbtest: unknown dialect %q", dialect)
		return nil
	}
}

// SQLite returns a fresh store on an SQLite file in the test's temporary directory.
func SQLite(tb testing.TB) *db.Store { return sqliteWith(tb, nil) }

func sqliteWith(tb testing.TB, mods []db.ModuleSchema) *db.Store {
	tb.Helper()
	s, err := db.Open(context.Background(), db.Options{
		SQLitePath: filepath.Join(tb.TempDir(), "wharf.db"),
		Logger:     quietLogger(),
		Modules:    mods,
		AuditKey:   AuditKey,
	})
	if err != nil {
		tb.Fatalf("dbtest: open SQLite store: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// PostgresURL creates a fresh schema in the database at PostgresURLEnv, dropped when the
// test ends, and returns a URL that uses it; for tests that open the database themselves
// (a whole gateway). It skips the test when the variable is not set.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	base := PostgresBaseURL(tb)
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("dbtest: %s is not a URL", PostgresURLEnv)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatalf("dbtest: connect to PostgreSQL: %v", err)
	}
	tb.Cleanup(func() { admin.Close() })

	ctx := context.Background()
	dropStaleSchemas.Do(func() { dropStale(ctx, admin) })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := fmt.Sprintf("%s%d_%s", schemaPrefix, time.Now().Unix(), hex.EncodeToString(b))
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("dbtest: create schema: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("dbtest: drop schema %s: %v", schema, err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres returns a fresh store in a new schema of the database at PostgresURLEnv, or
// skips the test when the variable is not set.
func Postgres(tb testing.TB) *db.Store { return postgresWith(tb, nil) }

func postgresWith(tb testing.TB, mods []db.ModuleSchema) *db.Store {
	tb.Helper()
	ctx := context.Background()
	s, err := db.Open(ctx, db.Options{URL: PostgresURL(tb), Logger: quietLogger(), Modules: mods, AuditKey: AuditKey})
	if err != nil {
		tb.Fatalf("dbtest: open PostgreSQL store: %v", err)
	}
	// Registered after the schema's clean-up, so it runs before it.
	tb.Cleanup(func() { s.Close() })
	return s
}

// schemaPrefix starts the name of every test schema, followed by its creation time (Unix
// seconds) and a random suffix.
const schemaPrefix = "wharf_test_"

var dropStaleSchemas sync.Once

// dropStale removes test schemas a killed test run left behind more than a day ago.
func dropStale(ctx context.Context, admin *sql.DB) {
	rows, err := admin.QueryContext(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, schemaPrefix)
	if err != nil {
		return
	}
	var stale []string
	for rows.Next() {
		var name string
		if rows.Scan(&name) != nil {
			continue
		}
		created, _, _ := strings.Cut(strings.TrimPrefix(name, schemaPrefix), "_")
		if sec, err := strconv.ParseInt(created, 10, 64); err == nil && time.Since(time.Unix(sec, 0)) > 24*time.Hour {
			stale = append(stale, name)
		}
	}
	rows.Close()
	for _, name := range stale {
		_, _ = admin.ExecContext(ctx, `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`)
	}
}

// quietLogger drops the stores' informational lines (schema applied, …) and keeps
// warnings, on stderr where a failing test shows them.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
