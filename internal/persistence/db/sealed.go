package db

import (
	"context"
	"fmt"
)

// Values sealed under the secrets master key (package secret) live in these columns; an
// empty value means none is set. ResealAll walks them all, so a column added here is
// covered by key rotation.
var sealedColumns = []struct{ table, key, column string }{
	{"secrets_check", "one", "sealed"},
	{"plugin_configs", "name", "secrets"},
	{"certificates", "id", "sealed_key"},
	{"users", "id", "totp_secret"},
	{"identity_providers", "name", "client_secret"},
	{"callback_secrets", "id", "sealed"},
}

// SecretsCheck returns the database's sealed check value, storing sealed as that value
// first when the database has none yet (a new database, or two processes starting on it
// at once: the first one's value stands).
func (s *Store) SecretsCheck(ctx context.Context, sealed []byte) ([]byte, error) {
	var stored []byte
	err := s.write(ctx, func(t *txn) error {
		if _, err := t.exec(ctx, `INSERT INTO secrets_check (one, sealed) VALUES (1, ?) ON CONFLICT (one) DO NOTHING`, sealed); err != nil {
			return err
		}
		return t.queryRow(ctx, `SELECT sealed FROM secrets_check WHERE one = 1`).Scan(&stored)
	})
	if err != nil {
		return nil, fmt.Errorf("read the secrets key check: %w", err)
	}
	return stored, nil
}

// ResealStats counts what ResealAll did.
type ResealStats struct {
	// Resealed values were replaced by what reseal returned.
	Resealed int
	// Kept values were left as they were (reseal returned nil).
	Kept int
	// Changed values were changed by someone else between read and write and left as
	// that writer stored them; a second run reseals them.
	Changed int
}

// ResealAll passes every sealed value in the database to reseal and stores what it
// returns in its place; nil keeps the value. Each table is rewritten in one transaction,
// each row only if it still holds the value read, so an interrupted run leaves every row
// with either its old or its new value, and a rerun continues where it stopped. An error
// from reseal names its table and row.
func (s *Store) ResealAll(ctx context.Context, reseal func(sealed []byte) ([]byte, error)) (ResealStats, error) {
	var st ResealStats
	for _, c := range sealedColumns {
		type row struct {
			key    any
			sealed []byte
		}
		var rows []row
		err := s.read(ctx, func(t *txn) error {
			rs, err := t.query(ctx, `SELECT `+c.key+`, `+c.column+` FROM `+c.table+` WHERE length(`+c.column+`) > 0 ORDER BY `+c.key)
			rows, err = collect(rs, err, func(r rowScanner) (x row, err error) { return x, r.Scan(&x.key, &x.sealed) })
			return err
		})
		if err != nil {
			return st, fmt.Errorf("read sealed values of %s: %w", c.table, err)
		}
		type change struct {
			key      any
			old, new []byte
		}
		var changes []change
		for _, r := range rows {
			n, err := reseal(r.sealed)
			if err != nil {
				return st, fmt.Errorf("%s %s = %v: %w", c.table, c.key, r.key, err)
			}
			if n == nil {
				st.Kept++
				continue
			}
			changes = append(changes, change{key: r.key, old: r.sealed, new: n})
		}
		if len(changes) == 0 {
			continue
		}
		var done, lost int
		err = s.write(ctx, func(t *txn) error {
			done, lost = 0, 0
			for _, ch := range changes {
				res, err := t.exec(ctx, `UPDATE `+c.table+` SET `+c.column+` = ? WHERE `+c.key+` = ? AND `+c.column+` = ?`, ch.new, ch.key, ch.old)
				if err != nil {
					return err
				}
				if n, err := res.RowsAffected(); err != nil {
					return err
				} else if n == 1 {
					done++
				} else {
					lost++
				}
			}
			return nil
		})
		if err != nil {
			return st, fmt.Errorf("store resealed values of %s: %w", c.table, err)
		}
		st.Resealed += done
		st.Changed += lost
	}
	return st, nil
}
