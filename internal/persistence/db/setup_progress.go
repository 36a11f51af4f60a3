package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// CountProblemsByPartner reads the problem messages through the (status, created_at)
// index and attributes each to the partner at either end.
func (s *Store) CountProblemsByPartner(ctx context.Context, refusedSince time.Time, limit int) ([]persistence.PartnerCount, error) {
	args := []any{string(persistence.PartyPartner)}
	var open []string
	for _, st := range persistence.ProblemStatuses {
		if st != persistence.StatusRefused {
			open = append(open, "?")
			args = append(args, string(st))
		}
	}
	args = append(args, string(persistence.StatusRefused), s.tv(refusedSince), limit)
	var out []persistence.PartnerCount
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT p.name, COUNT(*) FROM messages m
			JOIN parties p ON p.kind = ? AND (p.name = m.from_party OR p.name = m.to_party)
			WHERE m.status IN (`+strings.Join(open, ", ")+`) OR (m.status = ? AND m.created_at >= ?)
			GROUP BY p.name ORDER BY COUNT(*) DESC, p.name LIMIT ?`, args...)
		out, err = collect(rows, err, func(r rowScanner) (persistence.PartnerCount, error) {
			var c persistence.PartnerCount
			return c, r.Scan(&c.Partner, &c.Count)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count problems by partner: %w", err)
	}
	return out, nil
}

// SetupProgress reads the first-run checklist's steps, each one bounded query.
func (s *Store) SetupProgress(ctx context.Context) (persistence.SetupProgress, error) {
	var p persistence.SetupProgress
	err := s.read(ctx, func(t *txn) error {
		first := func(q string, dst any, args ...any) (bool, error) {
			err := t.queryRow(ctx, q, args...).Scan(dst)
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		}
		var err error
		if _, err = first(`SELECT name FROM parties WHERE kind = ? ORDER BY id LIMIT 1`, &p.Organization, string(persistence.PartyOrganization)); err != nil {
			return err
		}
		if p.HasPartner, err = first(`SELECT name FROM parties WHERE kind = ? ORDER BY id LIMIT 1`, &p.Partner, string(persistence.PartyPartner)); err != nil {
			return err
		}
		var org persistence.PartyName
		if p.Identity, err = first(`SELECT u.name FROM certificate_uses u
				JOIN parties o ON o.kind = ? AND o.name = u.name
				JOIN certificates c ON c.id = u.certificate_id AND LENGTH(c.sealed_key) > 0
				WHERE u.kind <> ? LIMIT 1`, &org, string(persistence.PartyOrganization), persistence.PluginCertificateUse); err != nil {
			return err
		}
		if p.Identity {
			p.Organization = org
		}
		var one int
		p.Sent, err = first(`SELECT 1 FROM messages m JOIN parties p ON p.kind = ? AND p.name = m.to_party LIMIT 1`, &one, string(persistence.PartyPartner))
		return err
	})
	if err != nil {
		return p, fmt.Errorf("read setup progress: %w", err)
	}
	return p, nil
}
