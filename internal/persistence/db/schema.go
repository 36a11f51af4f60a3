package db

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The schema is a numbered list of SQL files per dialect (schema/<dialect>/NNNN_name.sql).
// Until the first release the files are edited in place and databases reset; no file ever
// migrates data.
//
//go:embed schema/sqlite/*.sql schema/postgres/*.sql
var schemaFS embed.FS

// ErrSchemaNewer means the database was migrated by a newer binary than this one.
var ErrSchemaNewer = errors.New("run a newer wharf, or reset the database")

type schemaVersion struct {
	version int
	name    string
	sql     string
}

// schemaVersions lists the embedded versions of a dialect, in order.
func schemaVersions(dialect string) ([]schemaVersion, error) {
	return readVersions(schemaFS, path.Join("schema", dialect), "")
}

// readVersions reads the NNNN_name.sql files of dir, in order, and checks that they are
// numbered 1, 2, 3, … without gaps. what prefixes errors (a module's name).
func readVersions(fsys fs.FS, dir, what string) ([]schemaVersion, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("%sread %s schema: %w", what, dir, err)
	}
	var out []schemaVersion
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("%sschema file %s: name must start with a version number", what, e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, schemaVersion{version: n, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, v := range out {
		if v.version != i+1 {
			return nil, fmt.Errorf("%sschema file %s: expected version %d", what, v.name, i+1)
		}
	}
	return out, nil
}

// splitStatements cuts a schema file into statements at semicolons that end a line.
// Schema files hold no procedural code, so that is enough.
func splitStatements(src string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		out = append(out, rest)
	}
	return out
}

// migrationLockClass keys the PostgreSQL advisory lock that serializes schema changes of
// processes starting at once; the second key is the schema's name, so databases sharing a
// server (tests, tenants) do not wait for each other.
const migrationLockClass = 0x77686172 // "whar"

// migrate applies the embedded schema versions the database lacks, in one transaction.
func (s *Store) migrate(ctx context.Context) error {
	versions, err := schemaVersions(s.dialect)
	if err != nil {
		return fmt.Errorf("read embedded schema: %w", err)
	}
	known := len(versions)
	return s.write(ctx, func(t *txn) error {
		if s.dialect == DialectPostgres {
			if _, err := t.exec(ctx, `SELECT pg_advisory_xact_lock(?, hashtext(current_schema()))`, migrationLockClass); err != nil {
				return fmt.Errorf("lock schema: %w", err)
			}
		}
		if _, err := t.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			version    INTEGER PRIMARY KEY,
			applied_at TEXT NOT NULL
		)`); err != nil {
			return fmt.Errorf("create schema_version: %w", err)
		}
		var current int
		if err := t.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if current > known {
			return fmt.Errorf("the database schema is version %d but this binary knows only up to %d: %w", current, known, ErrSchemaNewer)
		}
		for _, v := range versions[current:] {
			for _, stmt := range splitStatements(v.sql) {
				if _, err := t.exec(ctx, stmt); err != nil {
					return fmt.Errorf("apply schema %s: %w", v.name, err)
				}
			}
			if _, err := t.exec(ctx, `INSERT INTO schema_version (version, applied_at) VALUES (?, ?)`,
				v.version, formatTime(t.now)); err != nil {
				return fmt.Errorf("record schema %s: %w", v.name, err)
			}
			s.log.Info("applied database schema", "dialect", s.dialect, "version", v.version, "file", v.name)
		}
		return nil
	})
}
