package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"wharf/internal/persistence"
)

func checkRoute(r persistence.Route) error {
	if err := check("source", r.Source, persistence.ParseInstanceName); err != nil {
		return err
	}
	if err := check("from", r.From, persistence.ParsePartyPattern); err != nil {
		return err
	}
	if err := check("to", r.To, persistence.ParsePartyPattern); err != nil {
		return err
	}
	if err := check("target", r.Target, persistence.ParseInstanceName); err != nil {
		return err
	}
	if err := persistence.CheckSessionBy(r); err != nil {
		return err
	}
	if r.Retry != nil {
		return persistence.CheckRetry("retry", *r.Retry)
	}
	return nil
}

// CreateRoute inserts a route after checking, in the same transaction, that its instances
// and parties exist and that no route with the same source and target covers it or is
// covered by it.
func (s *Store) CreateRoute(ctx context.Context, r persistence.Route) (persistence.Route, error) {
	if err := checkRoute(r); err != nil {
		return persistence.Route{}, fmt.Errorf("create route: %w", err)
	}
	var out persistence.Route
	err := s.write(ctx, func(t *txn) (err error) {
		if out, err = t.insertRoute(ctx, r); err != nil {
			return err
		}
		return t.auditDiff(ctx, "create", "route", strconv.FormatInt(out.ID, 10), out.Describe(), nil, out)
	})
	return out, err
}

func (t *txn) insertRoute(ctx context.Context, r persistence.Route) (persistence.Route, error) {
	if err := t.checkRouteFits(ctx, r, 0); err != nil {
		return persistence.Route{}, err
	}
	policy, err := policyValue(r.Retry)
	if err != nil {
		return persistence.Route{}, fmt.Errorf("create route: %w", err)
	}
	out, err := scanRoute(t.queryRow(ctx, `INSERT INTO routes (source, from_party, to_party, target, ordered, session_by, created_at, retry_policy)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+routeCols, r.Source, r.From, r.To, r.Target, r.Ordered, r.SessionBy, t.s.tv(t.now), policy))
	if isUniqueViolation(err) {
		return out, fmt.Errorf("route %s %s→%s %s already exists: %w", r.Source, r.From, r.To, r.Target, persistence.ErrConflict)
	}
	if err != nil {
		return out, fmt.Errorf("create route: %w", err)
	}
	return out, nil
}

// checkRouteFits checks that a route's instances and parties exist and that no other
// route with the same source and target (than the one with id self) covers it or is
// covered by it.
func (t *txn) checkRouteFits(ctx context.Context, r persistence.Route, self int64) error {
	// The instance rows stay locked until commit (PostgreSQL), so a concurrent delete of an
	// instance or a concurrent overlapping route waits for this one.
	for _, ref := range []struct {
		field string
		name  persistence.InstanceName
	}{{"source", r.Source}, {"target", r.Target}} {
		var name string
		err := t.queryRow(ctx, `SELECT name FROM plugin_configs WHERE name = ?`+t.s.lockRows, ref.name).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return fieldMsg(ref.field, "no plugin instance %q", ref.name)
		}
		if err != nil {
			return fmt.Errorf("check route: %w", err)
		}
	}
	for _, ref := range []struct {
		field string
		p     persistence.PartyPattern
	}{{"from", r.From}, {"to", r.To}} {
		if ref.p == persistence.AnyParty {
			continue
		}
		rows, err := t.query(ctx, `SELECT id FROM parties WHERE name = ?`+t.s.lockRows, string(ref.p))
		ids, err := collect(rows, err, func(r rowScanner) (id int64, err error) { return id, r.Scan(&id) })
		if err != nil {
			return fmt.Errorf("check route: %w", err)
		}
		if len(ids) == 0 {
			return fieldMsg(ref.field, "no organization or partner %q", ref.p)
		}
	}
	rows, err := t.query(ctx, `SELECT `+routeCols+` FROM routes WHERE source = ? AND target = ? ORDER BY id`, r.Source, r.Target)
	existing, err := collect(rows, err, scanRoute)
	if err != nil {
		return fmt.Errorf("check route: %w", err)
	}
	for _, o := range existing {
		if o.ID != self && r.Overlaps(o) {
			return fmt.Errorf("route %s %s→%s %s overlaps route %d (%s→%s): %w",
				r.Source, r.From, r.To, r.Target, o.ID, o.From, o.To, persistence.ErrConflict)
		}
	}
	return nil
}

// UpdateRoute replaces route r.ID's fields (not its id or creation time) after the checks
// of CreateRoute, the coverage check leaving out the route itself, and audits the fields
// that changed.
func (s *Store) UpdateRoute(ctx context.Context, r persistence.Route) (persistence.Route, error) {
	if err := checkRoute(r); err != nil {
		return persistence.Route{}, fmt.Errorf("update route %d: %w", r.ID, err)
	}
	var out persistence.Route
	err := s.write(ctx, func(t *txn) error {
		before, err := scanRoute(t.queryRow(ctx, `SELECT `+routeCols+` FROM routes WHERE id = ?`+t.s.lockRows, r.ID))
		if err != nil {
			return notFound(err, "route %d", r.ID)
		}
		if err := t.checkRouteFits(ctx, r, r.ID); err != nil {
			return err
		}
		policy, err := policyValue(r.Retry)
		if err != nil {
			return fmt.Errorf("update route %d: %w", r.ID, err)
		}
		out, err = scanRoute(t.queryRow(ctx, `UPDATE routes SET source = ?, from_party = ?, to_party = ?, target = ?,
				ordered = ?, session_by = ?, retry_policy = ?
			WHERE id = ? RETURNING `+routeCols, r.Source, r.From, r.To, r.Target, r.Ordered, r.SessionBy, policy, r.ID))
		if isUniqueViolation(err) {
			return fmt.Errorf("route %s %s→%s %s already exists: %w", r.Source, r.From, r.To, r.Target, persistence.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("update route %d: %w", r.ID, err)
		}
		return t.auditDiff(ctx, "update", "route", strconv.FormatInt(r.ID, 10), out.Describe(), before, out)
	})
	return out, err
}

// GetRoute returns one route.
func (s *Store) GetRoute(ctx context.Context, id int64) (persistence.Route, error) {
	var out persistence.Route
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanRoute(t.queryRow(ctx, `SELECT `+routeCols+` FROM routes WHERE id = ?`, id))
		return notFound(err, "route %d", id)
	})
	return out, err
}

// ListRoutes lists every route in creation order.
func (s *Store) ListRoutes(ctx context.Context) ([]persistence.Route, error) {
	var out []persistence.Route
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+routeCols+` FROM routes ORDER BY id`)
		out, err = collect(rows, err, scanRoute)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return out, nil
}

// DeleteRoute deletes one route.
func (s *Store) DeleteRoute(ctx context.Context, id int64) error {
	return s.write(ctx, func(t *txn) error {
		before, err := scanRoute(t.queryRow(ctx, `SELECT `+routeCols+` FROM routes WHERE id = ?`+t.s.lockRows, id))
		if err != nil {
			return notFound(err, "route %d", id)
		}
		if _, err := t.exec(ctx, `DELETE FROM routes WHERE id = ?`, id); err != nil {
			return fmt.Errorf("delete route %d: %w", id, err)
		}
		return t.auditDiff(ctx, "delete", "route", strconv.FormatInt(id, 10), before.Describe(), before, nil)
	})
}
