package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

// partyRetentions reads every party's own retention.
func (t *txn) partyRetentions(ctx context.Context) ([]persistence.PartyRetention, error) {
	rows, err := t.query(ctx, `SELECT kind, name, payload_days, history_days, updated_at FROM party_retention ORDER BY kind, name`)
	out, err := collect(rows, err, scanPartyRetention)
	if err != nil {
		return nil, fmt.Errorf("read party retention: %w", err)
	}
	return out, nil
}

func scanPartyRetention(r rowScanner) (persistence.PartyRetention, error) {
	var pr persistence.PartyRetention
	var payload, history sql.NullInt64
	if err := r.Scan(&pr.Kind, &pr.Name, &payload, &history, timeCol{&pr.UpdatedAt}); err != nil {
		return pr, fmt.Errorf("read party retention: %w", err)
	}
	pr.PayloadDays, pr.HistoryDays = nullDays(payload), nullDays(history)
	return pr, nil
}

func nullDays(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	d := int(v.Int64)
	return &d
}

func daysArg(d *int) any {
	if d == nil {
		return nil
	}
	return *d
}

// GetPartyRetention returns a party's own retention; a party without one has nil days.
func (s *Store) GetPartyRetention(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) (persistence.PartyRetention, error) {
	out := persistence.PartyRetention{Kind: kind, Name: name}
	err := s.read(ctx, func(t *txn) error {
		if _, err := t.partyID(ctx, kind, name); err != nil {
			return err
		}
		pr, err := scanPartyRetention(t.queryRow(ctx, `SELECT kind, name, payload_days, history_days, updated_at FROM party_retention WHERE kind = ? AND name = ?`, kind, name))
		if err == nil {
			out = pr
		} else if !isNoRows(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("get retention of %s %s: %w", kind, name, err)
	}
	return out, nil
}

// SetPartyRetention sets (or, with both days nil, removes) a party's own retention, with
// an audit event in the same transaction.
func (s *Store) SetPartyRetention(ctx context.Context, pr persistence.PartyRetention) (persistence.PartyRetention, error) {
	if err := pr.Check(); err != nil {
		return pr, fmt.Errorf("set retention of %s %s: %w", pr.Kind, pr.Name, err)
	}
	err := s.write(ctx, func(t *txn) error {
		if _, err := t.partyID(ctx, pr.Kind, pr.Name); err != nil {
			return err
		}
		old, err := scanPartyRetention(t.queryRow(ctx, `SELECT kind, name, payload_days, history_days, updated_at FROM party_retention WHERE kind = ? AND name = ?`, pr.Kind, pr.Name))
		if err != nil && !isNoRows(err) {
			return err
		}
		if _, err := t.exec(ctx, `DELETE FROM party_retention WHERE kind = ? AND name = ?`, pr.Kind, pr.Name); err != nil {
			return fmt.Errorf("clear party retention: %w", err)
		}
		pr.UpdatedAt = t.now
		if pr.PayloadDays != nil || pr.HistoryDays != nil {
			if _, err := t.exec(ctx, `INSERT INTO party_retention (kind, name, payload_days, history_days, updated_at) VALUES (?, ?, ?, ?, ?)`,
				pr.Kind, pr.Name, daysArg(pr.PayloadDays), daysArg(pr.HistoryDays), t.s.tv(t.now)); err != nil {
				return fmt.Errorf("insert party retention: %w", err)
			}
		}
		return t.audit(ctx, "update", "party_retention", string(pr.Kind)+"/"+string(pr.Name), string(pr.Name), []audit.Change{
			{Path: "payload_retention_days", Old: daysJSON(old.PayloadDays), New: daysJSON(pr.PayloadDays)},
			{Path: "history_retention_days", Old: daysJSON(old.HistoryDays), New: daysJSON(pr.HistoryDays)},
		})
	})
	if err != nil {
		return pr, fmt.Errorf("set retention of %s %s: %w", pr.Kind, pr.Name, err)
	}
	return pr, nil
}

// daysJSON is an audit value: the days, or null when the global setting applies.
func daysJSON(d *int) []byte {
	if d == nil {
		return []byte("null")
	}
	return []byte(strconv.Itoa(*d))
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// partyID finds a party, ErrNotFound when there is none.
func (t *txn) partyID(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) (int64, error) {
	var id int64
	err := t.queryRow(ctx, `SELECT id FROM parties WHERE kind = ? AND name = ?`, kind, name).Scan(&id)
	return id, notFound(err, "%s %s", kind, name)
}
