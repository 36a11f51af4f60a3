package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"wharf/internal/persistence"
)

const (
	defaultListLimit = 100
	maxListLimit     = 1000
	maxDisplayName   = 200
)

// page applies the list defaults: limit 100 when zero, at most 1000, offset not negative.
func page(o persistence.ListOptions) (limit, offset int) {
	limit, offset = o.Limit, o.Offset
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)
	return limit, max(offset, 0)
}

func checkParty(p *persistence.Party) error {
	if err := check("kind", p.Kind, persistence.ParsePartyKind); err != nil {
		return err
	}
	if err := check("name", p.Name, persistence.ParsePartyName); err != nil {
		return err
	}
	if p.DisplayName == "" {
		p.DisplayName = string(p.Name)
	}
	return checkText("display_name", p.DisplayName, maxDisplayName)
}

// CreateParty inserts an organization or partner; a taken name of its kind is ErrConflict.
func (s *Store) CreateParty(ctx context.Context, p persistence.Party) (persistence.Party, error) {
	if err := checkParty(&p); err != nil {
		return persistence.Party{}, fmt.Errorf("create party: %w", err)
	}
	var out persistence.Party
	err := s.write(ctx, func(t *txn) (err error) {
		if out, err = t.insertParty(ctx, p); err != nil {
			return err
		}
		return t.auditDiff(ctx, "create", string(out.Kind), string(out.Name), string(out.Name), nil, out)
	})
	return out, err
}

func (t *txn) insertParty(ctx context.Context, p persistence.Party) (persistence.Party, error) {
	now := t.s.tv(t.now)
	out, err := scanParty(t.queryRow(ctx, `INSERT INTO parties (kind, name, display_name, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?) RETURNING `+partyCols, p.Kind, p.Name, p.DisplayName, now, now))
	if isUniqueViolation(err) {
		return out, fmt.Errorf("%s %q already exists: %w", p.Kind, p.Name, persistence.ErrConflict)
	}
	if err != nil {
		return out, fmt.Errorf("create %s %q: %w", p.Kind, p.Name, err)
	}
	return out, nil
}

// GetParty returns one organization or partner.
func (s *Store) GetParty(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) (persistence.Party, error) {
	var out persistence.Party
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanParty(t.queryRow(ctx, `SELECT `+partyCols+` FROM parties WHERE kind = ? AND name = ?`,
			string(kind), string(name)))
		return notFound(err, "%s %q", kind, name)
	})
	return out, err
}

// ListParties lists parties of kind (all kinds when empty) by name, with the total count.
func (s *Store) ListParties(ctx context.Context, kind persistence.PartyKind, opt persistence.ListOptions) ([]persistence.Party, int, error) {
	limit, offset := page(opt)
	where, args := "", []any{}
	if kind != "" {
		where, args = ` WHERE kind = ?`, append(args, string(kind))
	}
	var out []persistence.Party
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM parties`+where, args...).Scan(&total); err != nil {
			return fmt.Errorf("count parties: %w", err)
		}
		rows, err := t.query(ctx, `SELECT `+partyCols+` FROM parties`+where+` ORDER BY name, kind LIMIT ? OFFSET ?`,
			append(args, limit, offset)...)
		out, err = collect(rows, err, scanParty)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list parties: %w", err)
	}
	return out, total, nil
}

// UpdateParty changes a party's display name; kind and name identify it.
func (s *Store) UpdateParty(ctx context.Context, p persistence.Party) (persistence.Party, error) {
	if err := checkParty(&p); err != nil {
		return persistence.Party{}, fmt.Errorf("update party: %w", err)
	}
	var out persistence.Party
	err := s.write(ctx, func(t *txn) (err error) {
		before, err := scanParty(t.queryRow(ctx, `SELECT `+partyCols+` FROM parties WHERE kind = ? AND name = ?`+t.s.lockRows,
			p.Kind, p.Name))
		if err != nil {
			return notFound(err, "%s %q", p.Kind, p.Name)
		}
		out, err = scanParty(t.queryRow(ctx, `UPDATE parties SET display_name = ?, updated_at = ?
			WHERE kind = ? AND name = ? RETURNING `+partyCols, p.DisplayName, t.s.tv(t.now), p.Kind, p.Name))
		if err != nil {
			return notFound(err, "%s %q", p.Kind, p.Name)
		}
		return t.auditDiff(ctx, "update", string(out.Kind), string(out.Name), string(out.Name), before, out)
	})
	return out, err
}

// DeleteParty deletes a party no route names. A route's from and to name a party without
// its kind, so any route naming the name keeps the party.
func (s *Store) DeleteParty(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) error {
	return s.write(ctx, func(t *txn) error {
		before, err := scanParty(t.queryRow(ctx, `SELECT `+partyCols+` FROM parties WHERE kind = ? AND name = ?`+t.s.lockRows,
			string(kind), string(name)))
		if err != nil {
			return notFound(err, "%s %q", kind, name)
		}
		id := before.ID
		var routeID int64
		err = t.queryRow(ctx, `SELECT id FROM routes WHERE from_party = ? OR to_party = ? ORDER BY id LIMIT 1`,
			string(name), string(name)).Scan(&routeID)
		switch {
		case err == nil:
			return fmt.Errorf("%s %q is used by route %d: %w", kind, name, routeID, persistence.ErrInUse)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("delete %s %q: %w", kind, name, err)
		}
		if _, err := t.exec(ctx, `DELETE FROM parties WHERE id = ?`, id); err != nil {
			return fmt.Errorf("delete %s %q: %w", kind, name, err)
		}
		return t.auditDiff(ctx, "delete", string(kind), string(name), string(name), before, nil)
	})
}
