package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"wharf/internal/audit"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// SetMessageErasers sets the module runtimes whose tables keep content of messages; an
// erasure clears theirs in its own transaction. Set once at start, before any erasure.
func (s *Store) SetMessageErasers(es []module.MessageEraser) {
	s.erasers.Store(&es)
}

// erasableCond is true of a message whose content an erasure may remove: its source
// handed it over and every delivery of it is final.
var erasableCond = `m.stage <> 'accepted' AND NOT EXISTS (SELECT 1 FROM deliveries d
	WHERE d.message_id = m.id AND d.state NOT IN (` + quotedStates(persistence.ErasableStates) + `))`

func quotedStates(states []persistence.DeliveryState) string {
	out := ""
	for i, st := range states {
		if i > 0 {
			out += ", "
		}
		out += "'" + string(st) + "'"
	}
	return out
}

// erasureRange is the condition and arguments of the messages an ErasureFilter selects.
func (s *Store) erasureRange(f persistence.ErasureFilter) (string, []any) {
	return `(m.from_party = ? OR m.to_party = ?) AND m.created_at >= ? AND m.created_at < ?`,
		[]any{f.Party, f.Party, s.tv(f.From), s.tv(f.To)}
}

// CountErasable counts what erasing the filter's messages would come to, in one query.
func (s *Store) CountErasable(ctx context.Context, f persistence.ErasureFilter) (persistence.ErasureCount, error) {
	if err := f.Check(); err != nil {
		return persistence.ErasureCount{}, fmt.Errorf("count erasable messages: %w", err)
	}
	var out persistence.ErasureCount
	cond, args := s.erasureRange(f)
	err := s.read(ctx, func(t *txn) error {
		return t.queryRow(ctx, `SELECT
				COALESCE(SUM(CASE WHEN m.erased_at IS NOT NULL THEN 1 ELSE 0 END), 0),
				COALESCE(SUM(CASE WHEN m.erased_at IS NULL AND `+erasableCond+` THEN 1 ELSE 0 END), 0),
				COUNT(*)
			FROM messages m WHERE `+cond, args...).Scan(&out.AlreadyErased, &out.Erasable, &out.InFlight)
	})
	if err != nil {
		return persistence.ErasureCount{}, fmt.Errorf("count erasable messages of %s: %w", f.Party, err)
	}
	out.InFlight -= out.AlreadyErased + out.Erasable
	return out, nil
}

// ErasableIDs lists, in id order after afterID, at most limit messages of the filter that
// an erasure may erase now.
func (s *Store) ErasableIDs(ctx context.Context, f persistence.ErasureFilter, afterID int64, limit int) ([]int64, error) {
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("list erasable messages: %w", err)
	}
	cond, args := s.erasureRange(f)
	var out []int64
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT m.id FROM messages m WHERE `+cond+` AND m.id > ? AND m.erased_at IS NULL AND `+erasableCond+`
			ORDER BY m.id LIMIT ?`, append(args, afterID, limit)...)
		out, err = collect(rows, err, func(r rowScanner) (id int64, err error) { return id, r.Scan(&id) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list erasable messages of %s: %w", f.Party, err)
	}
	return out, nil
}

// EraseMessage erases one message's content (see EraseMessages). A missing message is
// ErrNotFound; one already erased is ErrErased; one with deliveries under way, or still
// held by its source, is ErrConflict saying so. Nothing is written then.
func (s *Store) EraseMessage(ctx context.Context, id int64, actor string) error {
	err := s.write(ctx, func(t *txn) error {
		var erased *time.Time
		var erasable bool
		err := t.queryRow(ctx, `SELECT m.erased_at, CASE WHEN `+erasableCond+` THEN 1 ELSE 0 END
			FROM messages m WHERE m.id = ?`+t.s.lockRows, id).Scan(nullTimeCol{&erased}, &erasable)
		if err != nil {
			return notFound(err, "message %d", id)
		}
		if erased != nil {
			return fmt.Errorf("message %d was erased at %s: %w", id, erased.Format(time.RFC3339), persistence.ErrErased)
		}
		if !erasable {
			return fmt.Errorf("message %d still has deliveries under way (or its source still holds it): erase it once every delivery is delivered, failed or skipped: %w",
				id, persistence.ErrConflict)
		}
		if err := t.eraseMessages(ctx, []int64{id}, actor); err != nil {
			return err
		}
		return t.audit(operatorCtx(ctx, t.actor), "erase", "message", strconv.FormatInt(id, 10), "message "+strconv.FormatInt(id, 10),
			[]audit.Change{{Path: "erased", New: json.RawMessage("1")}})
	})
	if err != nil {
		return fmt.Errorf("erase message %d: %w", id, err)
	}
	return nil
}

// EraseMessages erases the content of at most persistence.MaxErasureBatch messages in one
// transaction, skipping those erased already or no longer erasable (counted in the
// result): the original file name becomes persistence.ErasedFileName, the metadata is
// emptied, the deliveries' external references are cleared, each module eraser clears
// its tables, and the message is marked erased with an erased history line; one audit
// event names how many. The payload rows stay until their blobs are deleted (see
// ErasedPayloads), so a crash between the commit and the deletion leaves the blobs
// findable. Statuses, parties, sizes and times stay, so every count stays the same.
func (s *Store) EraseMessages(ctx context.Context, ids []int64, actor, scope string) (persistence.ErasureResult, error) {
	if len(ids) > persistence.MaxErasureBatch {
		return persistence.ErasureResult{}, fmt.Errorf("erase messages: %d ids, at most %d per batch", len(ids), persistence.MaxErasureBatch)
	}
	var out persistence.ErasureResult
	err := s.write(ctx, func(t *txn) error {
		out = persistence.ErasureResult{}
		if len(ids) == 0 {
			return nil
		}
		in, args := module.IDList(ids)
		rows, err := t.query(ctx, `SELECT m.id, m.erased_at IS NOT NULL, CASE WHEN `+erasableCond+` THEN 1 ELSE 0 END
			FROM messages m WHERE m.id IN `+in+` ORDER BY m.id`+t.s.lockRows, args...)
		type state struct {
			id               int64
			erased, erasable bool
		}
		found, err := collect(rows, err, func(r rowScanner) (st state, err error) {
			return st, r.Scan(&st.id, &st.erased, &st.erasable)
		})
		if err != nil {
			return err
		}
		var now []int64
		for _, st := range found {
			switch {
			case st.erased:
				out.AlreadyErased++
			case !st.erasable:
				out.InFlight++
			default:
				now = append(now, st.id)
			}
		}
		if len(now) == 0 {
			return nil
		}
		if err := t.eraseMessages(ctx, now, actor); err != nil {
			return err
		}
		out.Erased = len(now)
		return t.audit(operatorCtx(ctx, t.actor), "erase", "message", "", fmt.Sprintf("%d messages of %s", len(now), scope),
			[]audit.Change{{Path: "erased", New: json.RawMessage(strconv.Itoa(len(now)))}})
	})
	if err != nil {
		return persistence.ErasureResult{}, fmt.Errorf("erase messages: %w", err)
	}
	return out, nil
}

// receivedReason is the reason of a message's received history line. It names the
// original file name, so an erasure writes it again with the erased name.
func receivedReason(m persistence.Message) string {
	return fmt.Sprintf("%s from %s to %s via %s", m.OriginalFileName, m.From, m.To, m.Source)
}

// eraseMessages clears the content of messages the caller found erasable and locked.
func (t *txn) eraseMessages(ctx context.Context, ids []int64, actor string) error {
	t.actor = actorOr(actor)
	if err := t.eraseMentions(ctx, ids); err != nil {
		return err
	}
	in, idArgs := module.IDList(ids)
	if _, err := t.exec(ctx, `UPDATE messages SET original_file_name = ?, metadata = '{}', erased_at = ?, updated_at = ?
		WHERE id IN `+in, append([]any{persistence.ErasedFileName, t.s.tv(t.now), t.s.tv(t.now)}, idArgs...)...); err != nil {
		return fmt.Errorf("clear messages: %w", err)
	}
	// An in-house system's reference to a delivery may name the document (its file
	// name, an order number).
	if _, err := t.exec(ctx, `UPDATE deliveries SET external_ref = '' WHERE message_id IN `+in, idArgs...); err != nil {
		return fmt.Errorf("clear deliveries' references: %w", err)
	}
	if es := t.s.erasers.Load(); es != nil {
		for _, e := range *es {
			if err := e.EraseMessages(ctx, moduleTx{t}, ids); err != nil {
				return fmt.Errorf("erase module content: %w", err)
			}
		}
	}
	for _, id := range ids {
		t.note(historyRow{messageID: id, kind: persistence.HistoryErased, reason: "content erased by an operator", actor: t.actor})
	}
	return nil
}

// refuseErased refuses, with ErrErased, an action that would send an erased message again.
func (t *txn) refuseErased(ctx context.Context, messageID int64) error {
	var erased *time.Time
	if err := t.queryRow(ctx, `SELECT erased_at FROM messages WHERE id = ?`, messageID).Scan(nullTimeCol{&erased}); err != nil {
		return notFound(err, "message %d", messageID)
	}
	if erased != nil {
		return fmt.Errorf("message %d was erased at %s and has no content to send: %w", messageID, erased.Format(time.RFC3339), persistence.ErrErased)
	}
	return nil
}
