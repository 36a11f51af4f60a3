package db

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"regexp"
	"time"

	"wharf/internal/module"
)

// ModuleSchema is one module's tables: files sqlite/NNNN_name.sql and
// postgres/NNNN_name.sql in FS, numbered from 1 without gaps.
type ModuleSchema struct {
	Name string
	FS   fs.FS
}

var moduleNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// moduleVersions lists a module's schema versions for the dialect, in order.
func moduleVersions(m ModuleSchema, dialect string) ([]schemaVersion, error) {
	if !moduleNameRE.MatchString(m.Name) {
		return nil, fmt.Errorf("module name %q: want lower-case letters, digits and _", m.Name)
	}
	return readVersions(m.FS, dialect, "module "+m.Name+": ")
}

// migrateModules applies the modules' schema versions the database lacks, after the
// core's, in one transaction; like the core's, a newer version than the binary knows is
// refused.
func (s *Store) migrateModules(ctx context.Context, mods []ModuleSchema) error {
	if len(mods) == 0 {
		return nil
	}
	all := make([][]schemaVersion, len(mods))
	for i, m := range mods {
		v, err := moduleVersions(m, s.dialect)
		if err != nil {
			return err
		}
		all[i] = v
	}
	return s.write(ctx, func(t *txn) error {
		if s.dialect == DialectPostgres {
			if _, err := t.exec(ctx, `SELECT pg_advisory_xact_lock(?, hashtext(current_schema()))`, migrationLockClass); err != nil {
				return fmt.Errorf("lock schema: %w", err)
			}
		}
		if _, err := t.exec(ctx, `CREATE TABLE IF NOT EXISTS module_schema_version (
			module     TEXT NOT NULL,
			version    INTEGER NOT NULL,
			applied_at TEXT NOT NULL,
			PRIMARY KEY (module, version)
		)`); err != nil {
			return fmt.Errorf("create module_schema_version: %w", err)
		}
		for i, m := range mods {
			var current int
			if err := t.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM module_schema_version WHERE module = ?`, m.Name).Scan(&current); err != nil {
				return fmt.Errorf("read schema version of module %s: %w", m.Name, err)
			}
			if current > len(all[i]) {
				return fmt.Errorf("the database schema of module %s is version %d but this binary knows only up to %d: %w",
					m.Name, current, len(all[i]), ErrSchemaNewer)
			}
			for _, v := range all[i][current:] {
				for _, stmt := range splitStatements(v.sql) {
					if _, err := t.exec(ctx, stmt); err != nil {
						return fmt.Errorf("apply schema %s of module %s: %w", v.name, m.Name, err)
					}
				}
				if _, err := t.exec(ctx, `INSERT INTO module_schema_version (module, version, applied_at) VALUES (?, ?, ?)`,
					m.Name, v.version, formatTime(t.now)); err != nil {
					return fmt.Errorf("record schema %s of module %s: %w", v.name, m.Name, err)
				}
				s.log.Info("applied module schema", "module", m.Name, "dialect", s.dialect, "version", v.version, "file", v.name)
			}
		}
		return nil
	})
}

// ModuleSQL gives modules transactions for their own tables.
func (s *Store) ModuleSQL() module.SQL { return moduleSQL{s} }

type moduleSQL struct{ s *Store }

func (m moduleSQL) Dialect() string { return m.s.dialect }

func (m moduleSQL) Read(ctx context.Context, fn func(module.Tx) error) error {
	return m.s.read(ctx, func(t *txn) error { return fn(moduleTx{t}) })
}

func (m moduleSQL) Write(ctx context.Context, fn func(module.Tx) error) error {
	return m.s.write(ctx, func(t *txn) error { return fn(moduleTx{t}) })
}

type moduleTx struct{ t *txn }

func (x moduleTx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return x.t.exec(ctx, q, args...)
}

func (x moduleTx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return x.t.query(ctx, q, args...)
}

func (x moduleTx) QueryRow(ctx context.Context, q string, args ...any) module.Row {
	return x.t.queryRow(ctx, q, args...)
}

func (x moduleTx) Now() time.Time                   { return x.t.now }
func (x moduleTx) Time(t time.Time) any             { return x.t.s.tv(t) }
func (x moduleTx) IsUniqueViolation(err error) bool { return isUniqueViolation(err) }

func (x moduleTx) Audit(ctx context.Context, action, kind, recordID, recordName string, before, after any, secret ...string) error {
	return x.t.auditDiff(ctx, action, kind, recordID, recordName, before, after, secret...)
}

func (x moduleTx) ScanTime(dst *time.Time) sql.Scanner { return zeroTimeCol{dst} }

// zeroTimeCol scans a time column; NULL leaves the zero time.
type zeroTimeCol struct{ dst *time.Time }

func (c zeroTimeCol) Scan(src any) error {
	t, err := parseTimeValue(src)
	if err != nil {
		return err
	}
	if t == nil {
		*c.dst = time.Time{}
		return nil
	}
	*c.dst = *t
	return nil
}
