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

// PartnerActivity reads a partner's traffic. Every query reads one party's messages
// through the (from_party, created_at) and (to_party, created_at) indexes, bounded by
// the 7-day window, except the last successes, which read backwards from the newest
// message of the party until the first that qualifies.
func (s *Store) PartnerActivity(ctx context.Context, partner persistence.PartyName, now time.Time) (persistence.PartnerActivity, error) {
	a := persistence.PartnerActivity{Partner: partner}
	day, week := s.tv(now.Add(-24*time.Hour)), s.tv(now.Add(-7*24*time.Hour))
	failed := `status IN ('` + string(persistence.StatusError) + `', '` + string(persistence.StatusRefused) + `')`
	problems := make([]string, 0, len(persistence.ProblemStatuses))
	for _, st := range persistence.ProblemStatuses {
		if st != persistence.StatusRefused {
			problems = append(problems, `'`+string(st)+`'`)
		}
	}
	err := s.read(ctx, func(t *txn) error {
		// Both directions, each through its own index, then added up.
		for _, col := range []string{"from_party", "to_party"} {
			var m24, f24, m7, f7, open int
			err := t.queryRow(ctx, `SELECT
					COUNT(*) FILTER (WHERE created_at >= ?),
					COUNT(*) FILTER (WHERE created_at >= ? AND `+failed+`),
					COUNT(*),
					COUNT(*) FILTER (WHERE `+failed+`),
					COUNT(*) FILTER (WHERE status = ?)
				FROM messages WHERE `+col+` = ? AND created_at >= ?`,
				day, day, string(persistence.StatusRefused), string(partner), week).Scan(&m24, &f24, &m7, &f7, &open)
			if err != nil {
				return err
			}
			a.Messages24h += m24
			a.Failed24h += f24
			a.Messages7d += m7
			a.Failed7d += f7
			a.Problems += open
			var stuck int
			if err := t.queryRow(ctx, `SELECT COUNT(*) FROM messages WHERE `+col+` = ? AND status IN (`+strings.Join(problems, ", ")+`)`,
				string(partner)).Scan(&stuck); err != nil {
				return err
			}
			a.Problems += stuck
		}
		for _, last := range []struct {
			dst    *time.Time
			query  string
			status persistence.MessageStatus
		}{
			{&a.LastDelivered, `SELECT created_at FROM messages WHERE to_party = ? AND status = ? ORDER BY created_at DESC LIMIT 1`, persistence.StatusDelivered},
			{&a.LastReceived, `SELECT created_at FROM messages WHERE from_party = ? AND status <> ? ORDER BY created_at DESC LIMIT 1`, persistence.StatusRefused},
		} {
			err := t.queryRow(ctx, last.query, string(partner), string(last.status)).Scan(timeCol{last.dst})
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		var any int
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM messages WHERE from_party = ? UNION ALL SELECT 1 FROM messages WHERE to_party = ? LIMIT 1) AS one`,
			string(partner), string(partner)).Scan(&any); err != nil {
			return err
		}
		a.Ever = any > 0
		var expiry *time.Time
		if err := t.queryRow(ctx, `SELECT MIN(c.not_after) FROM certificate_uses u JOIN certificates c ON c.id = u.certificate_id
			WHERE u.name = ? AND u.kind <> ?`, string(partner), persistence.PluginCertificateUse).Scan(nullTimeCol{&expiry}); err != nil {
			return err
		}
		if expiry != nil {
			a.CertificateExpiry = *expiry
		}
		return t.readPause(ctx, &a)
	})
	if err != nil {
		return a, fmt.Errorf("activity of partner %s: %w", partner, err)
	}
	return a, nil
}

// PartnerCertificates lists the certificates the records named after the partner use
// (its protocol profiles; plugin instances are named otherwise), soonest expiry first.
func (s *Store) PartnerCertificates(ctx context.Context, partner persistence.PartyName) ([]persistence.Certificate, error) {
	var out []persistence.Certificate
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+prefixCols("c.", certificateCols)+` FROM certificates c
			WHERE c.id IN (SELECT certificate_id FROM certificate_uses WHERE name = ? AND kind <> ?)
			ORDER BY c.not_after, c.id`, string(partner), persistence.PluginCertificateUse)
		out, err = collect(rows, err, scanCertificate)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("certificates of partner %s: %w", partner, err)
	}
	return out, nil
}

// prefixCols qualifies each column of a column list with prefix.
func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
