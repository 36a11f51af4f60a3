package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// TargetStateCount is how many deliveries of one target are in one state.
type TargetStateCount struct {
	Target persistence.InstanceName
	State  persistence.DeliveryState
	Count  int
}

// CountOpenDeliveries counts the deliveries that are not final (persistence.DeliveryState
// Final), by target and state, for the metrics' gauge: the final ones only grow, and the
// metrics count them as transitions instead, so the scan stays on the work in hand.
func (s *Store) CountOpenDeliveries(ctx context.Context) ([]TargetStateCount, error) {
	var open []any
	for _, st := range persistence.AllDeliveryStates {
		if !st.Final() {
			open = append(open, string(st))
		}
	}
	q := `SELECT target, state, COUNT(*) FROM deliveries WHERE state IN (?` + strings.Repeat(`, ?`, len(open)-1) +
		`) GROUP BY target, state ORDER BY target, state`
	var out []TargetStateCount
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, q, open...)
		out, err = collect(rows, err, func(r rowScanner) (TargetStateCount, error) {
			var c TargetStateCount
			if err := r.Scan(&c.Target, &c.State, &c.Count); err != nil {
				return c, fmt.Errorf("read delivery count: %w", err)
			}
			return c, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count open deliveries: %w", err)
	}
	return out, nil
}

// UnusedCertificate is the use kind CertificateExpiryByUse reports certificates under that
// no record names.
const UnusedCertificate = "unused"

// CertificateExpiryByUse is the soonest end of validity among the certificates of each use
// kind (persistence.CertificateUse.Kind: a code-defined, bounded set), and among those no
// record uses under UnusedCertificate. It names no certificate and no record.
func (s *Store) CertificateExpiryByUse(ctx context.Context) (map[string]time.Time, error) {
	const q = `SELECT u.kind, MIN(c.not_after) FROM certificate_uses u JOIN certificates c ON c.id = u.certificate_id GROUP BY u.kind
		UNION ALL
		SELECT CAST(? AS TEXT), MIN(c.not_after) FROM certificates c WHERE NOT EXISTS (SELECT 1 FROM certificate_uses u WHERE u.certificate_id = c.id)`
	out := map[string]time.Time{}
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, q, UnusedCertificate)
		if err != nil {
			return err
		}
		for rows.Next() {
			var kind string
			var at *time.Time
			if err := rows.Scan(&kind, nullTimeCol{&at}); err != nil {
				rows.Close()
				return fmt.Errorf("read certificate expiry: %w", err)
			}
			if at != nil {
				out[kind] = *at
			}
		}
		return closeRows(rows)
	})
	if err != nil {
		return nil, fmt.Errorf("certificate expiry by use: %w", err)
	}
	return out, nil
}
