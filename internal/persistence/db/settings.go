package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"wharf/internal/persistence"
)

const (
	maxSettingKey   = 128
	maxSettingValue = 64 << 10
)

func checkSetting(key, value string) error {
	if key == "" {
		return fieldMsg("key", "is empty")
	}
	if err := checkText("key", key, maxSettingKey); err != nil {
		return err
	}
	if len(value) > maxSettingValue {
		return fieldMsg("value", "longer than %d bytes", maxSettingValue)
	}
	return nil
}

// ListSettings returns every setting.
func (s *Store) ListSettings(ctx context.Context) (map[string]string, error) {
	out := make(map[string]string)
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT key, value FROM settings ORDER BY key`)
		kvs, err := collect(rows, err, func(r rowScanner) (kv [2]string, err error) { return kv, r.Scan(&kv[0], &kv[1]) })
		for _, kv := range kvs {
			out[kv[0]] = kv[1]
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list settings: %w", err)
	}
	return out, nil
}

// GetSetting returns one setting; a key never set is ErrNotFound.
func (s *Store) GetSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := s.read(ctx, func(t *txn) error {
		return notFound(t.queryRow(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v), "setting %q", key)
	})
	return v, err
}

// PutSetting sets one setting, replacing its value.
func (s *Store) PutSetting(ctx context.Context, key, value string) error {
	if err := checkSetting(key, value); err != nil {
		return fmt.Errorf("put setting: %w", err)
	}
	return s.write(ctx, func(t *txn) error {
		var before any
		var old string
		err := t.queryRow(ctx, `SELECT value FROM settings WHERE key = ?`+t.s.lockRows, key).Scan(&old)
		switch {
		case err == nil:
			before = map[string]string{"value": old}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("put setting %q: %w", key, err)
		}
		if err := t.putSetting(ctx, key, value, true); err != nil {
			return fmt.Errorf("put setting %q: %w", key, err)
		}
		return t.auditDiff(ctx, "update", "setting", key, key, before, map[string]string{"value": value})
	})
}

func (t *txn) putSetting(ctx context.Context, key, value string, replace bool) error {
	onConflict := ` ON CONFLICT (key) DO NOTHING`
	if replace {
		onConflict = ` ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	}
	_, err := t.exec(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)`+onConflict, key, value, t.s.tv(t.now))
	return err
}

// seededKey marks a database Seed has filled.
const seededKey = "seeded_at"

// Seeded reports whether a gateway has seeded the database, so a tool that works on an
// existing one can tell it from an empty database it has just created the schema in.
func (s *Store) Seeded(ctx context.Context) (bool, error) {
	_, err := s.GetSetting(ctx, seededKey)
	if errors.Is(err, persistence.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Seed fills a new database with data, once: the first call inserts everything and the
// seeded_at setting in one transaction and reports true; later calls, and calls racing
// it, report false.
func (s *Store) Seed(ctx context.Context, data persistence.SeedData) (bool, error) {
	var seeded bool
	err := s.write(ctx, func(t *txn) error {
		seeded = false
		// The marker goes first: a concurrent Seed on PostgreSQL waits here on the key
		// until this transaction ends, then finds it.
		rows, err := t.query(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO NOTHING RETURNING key`, seededKey, formatTime(t.now), t.s.tv(t.now))
		keys, err := collect(rows, err, func(r rowScanner) (k string, err error) { return k, r.Scan(&k) })
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return nil
		}
		for i, p := range data.Organizations {
			if p.Kind == "" {
				p.Kind = persistence.PartyOrganization
			}
			if err := checkParty(&p); err != nil {
				return prefixField(fmt.Sprintf("organizations[%d].", i), err)
			}
			out, err := t.insertParty(ctx, p)
			if err != nil {
				return err
			}
			if err := t.auditDiff(ctx, "create", string(out.Kind), string(out.Name), string(out.Name), nil, out); err != nil {
				return err
			}
		}
		for i, c := range data.Plugins {
			if err := checkPlugin(&c); err != nil {
				return prefixField(fmt.Sprintf("plugins[%d].", i), err)
			}
			out, err := t.insertPlugin(ctx, c)
			if err != nil {
				return err
			}
			if err := t.auditPlugin(ctx, "create", nil, &out); err != nil {
				return err
			}
		}
		for i, r := range data.Routes {
			if err := checkRoute(r); err != nil {
				return prefixField(fmt.Sprintf("routes[%d].", i), err)
			}
			out, err := t.insertRoute(ctx, r)
			if err != nil {
				return prefixField(fmt.Sprintf("routes[%d].", i), err)
			}
			if err := t.auditDiff(ctx, "create", "route", strconv.FormatInt(out.ID, 10), out.Describe(), nil, out); err != nil {
				return err
			}
		}
		for k, v := range data.Settings {
			if k == seededKey {
				continue
			}
			if err := checkSetting(k, v); err != nil {
				return prefixField("settings.", err)
			}
			if err := t.putSetting(ctx, k, v, false); err != nil {
				return fmt.Errorf("seed setting %q: %w", k, err)
			}
			if err := t.auditDiff(ctx, "update", "setting", k, k, nil, map[string]string{"value": v}); err != nil {
				return err
			}
		}
		seeded = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("seed database: %w", err)
	}
	return seeded, nil
}
