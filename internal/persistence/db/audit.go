package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

// audit appends an event to the audit log in t's transaction: it locks the chain's
// head, so events get gapless ids and each chains to the one before, in commit order.
// The actor comes from ctx (audit.WithActor).
func (t *txn) audit(ctx context.Context, action, kind, recordID, recordName string, changes []audit.Change) error {
	var lastID int64
	var prev []byte
	if err := t.queryRow(ctx, `SELECT last_id, hash FROM audit_head WHERE one = 1`+t.s.lockRows).Scan(&lastID, &prev); err != nil {
		return fmt.Errorf("audit %s %s: read chain head: %w", action, kind, err)
	}
	if prev == nil {
		prev = []byte{} // the first event's; an empty BLOB scans as nil
	}
	e := audit.Event{
		ID: lastID + 1,
		// The databases keep microseconds; the hashed time is the stored one.
		Time:       t.now.UTC().Truncate(time.Microsecond),
		Actor:      persistence.SanitizeReason(audit.ActorFrom(ctx)),
		Action:     action,
		Kind:       kind,
		RecordID:   recordID,
		RecordName: recordName,
		Changes:    changes,
		PrevHash:   prev,
	}
	if e.Actor == "" {
		e.Actor = audit.SystemActor
	}
	e.Hash = audit.Chain(t.s.auditKey, prev, e)
	if _, err := t.exec(ctx, `INSERT INTO audit_events (id, at, actor, action, kind, record_id, record_name, changes, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, t.s.tv(e.Time), e.Actor, e.Action, e.Kind, e.RecordID, e.RecordName,
		string(audit.ChangesJSON(e.Changes)), e.PrevHash, e.Hash); err != nil {
		return fmt.Errorf("audit %s %s: %w", action, kind, err)
	}
	if _, err := t.exec(ctx, `UPDATE audit_head SET last_id = ?, hash = ? WHERE one = 1`, e.ID, e.Hash); err != nil {
		return fmt.Errorf("audit %s %s: move chain head: %w", action, kind, err)
	}
	return nil
}

// auditDiff is audit with the changes between before and after (nil for a created or
// deleted record); secret names fields recorded as changed without values.
func (t *txn) auditDiff(ctx context.Context, action, kind, recordID, recordName string, before, after any, secret ...string) error {
	changes, err := audit.Diff(before, after, secret...)
	if err != nil {
		return fmt.Errorf("audit %s %s: %w", action, kind, err)
	}
	return t.audit(ctx, action, kind, recordID, recordName, changes)
}

// RecordAudit writes an event about an operator action that changes no row of its own
// (a service started, a test notification sent) in a transaction of its own.
func (s *Store) RecordAudit(ctx context.Context, action, kind, recordID, recordName string, changes []audit.Change) error {
	return s.write(ctx, func(t *txn) error {
		return t.audit(ctx, action, kind, recordID, recordName, changes)
	})
}

const auditCols = `id, at, actor, action, kind, record_id, record_name, changes, prev_hash, hash`

func scanAudit(r rowScanner) (audit.Event, error) {
	var e audit.Event
	var changes string
	err := r.Scan(&e.ID, timeCol{&e.Time}, &e.Actor, &e.Action, &e.Kind, &e.RecordID, &e.RecordName, &changes, &e.PrevHash, &e.Hash)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(changes), &e.Changes); err != nil {
		// A row edited into invalid JSON still lists; its hash no longer verifies.
		e.Changes = []audit.Change{{Path: "(unreadable)", New: json.RawMessage(strconv.Quote(changes))}}
	}
	if e.PrevHash == nil {
		e.PrevHash = []byte{}
	}
	return e, nil
}

// ListAudit lists audit events newest first, filtered, with the total count.
func (s *Store) ListAudit(ctx context.Context, f persistence.AuditFilter) ([]audit.Event, int, error) {
	limit, offset := page(f.ListOptions)
	where, args := ` WHERE 1 = 1`, []any{}
	add := func(cond string, v any) { where += ` AND ` + cond; args = append(args, v) }
	if f.Actor != "" {
		add(`actor = ?`, f.Actor)
	}
	if f.Kind != "" {
		add(`kind = ?`, f.Kind)
	}
	if f.Action != "" {
		add(`action = ?`, f.Action)
	}
	if f.RecordID != "" {
		add(`record_id = ?`, f.RecordID)
	}
	if f.AfterID > 0 {
		add(`id > ?`, f.AfterID)
	}
	if !f.Since.IsZero() {
		add(`at >= ?`, s.tv(f.Since))
	}
	if !f.Until.IsZero() {
		add(`at < ?`, s.tv(f.Until))
	}
	var out []audit.Event
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM audit_events`+where, args...).Scan(&total); err != nil {
			return fmt.Errorf("count audit events: %w", err)
		}
		rows, err := t.query(ctx, `SELECT `+auditCols+` FROM audit_events`+where+` ORDER BY id DESC LIMIT ? OFFSET ?`,
			append(args, limit, offset)...)
		out, err = collect(rows, err, scanAudit)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list audit events: %w", err)
	}
	return out, total, nil
}

// EachAudit calls fn with every event after afterID in id order, reading in pages so a
// long log is never held at once.
func (s *Store) EachAudit(ctx context.Context, afterID int64, fn func(audit.Event) error) error {
	const pageSize = 500
	for {
		var batch []audit.Event
		err := s.read(ctx, func(t *txn) error {
			rows, err := t.query(ctx, `SELECT `+auditCols+` FROM audit_events WHERE id > ? ORDER BY id LIMIT ?`, afterID, pageSize)
			batch, err = collect(rows, err, scanAudit)
			return err
		})
		if err != nil {
			return fmt.Errorf("read audit events: %w", err)
		}
		for _, e := range batch {
			if err := fn(e); err != nil {
				return err
			}
			afterID = e.ID
		}
		if len(batch) < pageSize {
			return nil
		}
	}
}

// VerifyAudit checks the whole chain with the store's key; see audit.Verifier. The head
// row is checked as well, so removing the newest events shows.
func (s *Store) VerifyAudit(ctx context.Context) (checked int, problems []audit.Problem, err error) {
	v := audit.NewVerifier(s.auditKey, 0, nil)
	var lastID int64
	var lastHash []byte
	if err := s.EachAudit(ctx, 0, func(e audit.Event) error {
		v.Add(e)
		lastID, lastHash = e.ID, e.Hash
		return nil
	}); err != nil {
		return 0, nil, err
	}
	checked, problems = v.Result()
	var headID int64
	var headHash []byte
	err = s.read(ctx, func(t *txn) error {
		return t.queryRow(ctx, `SELECT last_id, hash FROM audit_head WHERE one = 1`).Scan(&headID, &headHash)
	})
	if err != nil && err != sql.ErrNoRows {
		return 0, nil, fmt.Errorf("read audit chain head: %w", err)
	}
	if headID != lastID || string(headHash) != string(lastHash) {
		problems = append(problems, audit.Problem{EventID: headID,
			Text: fmt.Sprintf("the chain's head names event %d but the last event is %d: the newest events are missing or changed", headID, lastID)})
	}
	return checked, problems, nil
}
