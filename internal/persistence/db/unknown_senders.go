package db

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"wharf/internal/persistence"
)

// maxUnknownID bounds the ids and address kept of an unknown sender: they come from
// anyone who can reach a listener.
const maxUnknownID = 128

const unknownSenderCols = `id, source, remote_addr, sender_id, receiver_id, count, last_reason, first_seen, last_seen`

// RecordUnknownSenders counts refused requests under their (source, remote address,
// sender id, receiver id), in one transaction: a known pair is one update, a new one an
// insert, and when the table then holds more than persistence.MaxUnknownSenders rows the
// ones seen longest ago go.
func (s *Store) RecordUnknownSenders(ctx context.Context, hits []persistence.UnknownSenderHit) error {
	for i, hit := range hits {
		if err := check("source", hit.Source, persistence.ParseInstanceName); err != nil {
			return fmt.Errorf("record unknown senders: %w", prefixField(fmt.Sprintf("hits[%d].", i), err))
		}
		if hit.Count < 1 {
			return fmt.Errorf("record unknown senders: %w", fieldMsg(fmt.Sprintf("hits[%d].count", i), "must be at least 1"))
		}
	}
	if len(hits) == 0 {
		return nil
	}
	err := s.write(ctx, func(t *txn) error {
		now := t.s.tv(t.now)
		inserted := false
		for _, hit := range hits {
			addr, from, to := cleanID(hit.RemoteAddr), cleanID(hit.SenderID), cleanID(hit.ReceiverID)
			reason := persistence.SanitizeReason(hit.Reason)
			res, err := t.exec(ctx, `UPDATE unknown_senders SET count = count + ?, last_reason = ?, last_seen = ?
				WHERE source = ? AND remote_addr = ? AND sender_id = ? AND receiver_id = ?`,
				hit.Count, reason, now, hit.Source, addr, from, to)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n > 0 {
				if err != nil {
					return err
				}
				continue
			}
			if _, err := t.exec(ctx, `INSERT INTO unknown_senders (source, remote_addr, sender_id, receiver_id, count,
				last_reason, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				hit.Source, addr, from, to, hit.Count, reason, now, now); err != nil {
				return err
			}
			inserted = true
		}
		if !inserted {
			return nil
		}
		_, err := t.exec(ctx, `DELETE FROM unknown_senders WHERE id NOT IN
			(SELECT id FROM unknown_senders ORDER BY last_seen DESC, id DESC LIMIT ?)`, persistence.MaxUnknownSenders)
		return err
	})
	if err != nil {
		return fmt.Errorf("record %d unknown senders: %w", len(hits), err)
	}
	return nil
}

// ListUnknownSenders lists the counted unknown senders, last seen first, with the total.
func (s *Store) ListUnknownSenders(ctx context.Context, o persistence.ListOptions) ([]persistence.UnknownSender, int, error) {
	limit, offset := page(o)
	var out []persistence.UnknownSender
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM unknown_senders`).Scan(&total); err != nil {
			return err
		}
		rows, err := t.query(ctx, `SELECT `+unknownSenderCols+` FROM unknown_senders
			ORDER BY last_seen DESC, id DESC LIMIT ? OFFSET ?`, limit, offset)
		out, err = collect(rows, err, scanUnknownSender)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list unknown senders: %w", err)
	}
	return out, total, nil
}

func scanUnknownSender(r rowScanner) (persistence.UnknownSender, error) {
	var u persistence.UnknownSender
	err := r.Scan(&u.ID, &u.Source, &u.RemoteAddr, &u.SenderID, &u.ReceiverID, &u.Count, &u.LastReason,
		timeCol{&u.FirstSeen}, timeCol{&u.LastSeen})
	if err != nil {
		return u, fmt.Errorf("read unknown sender: %w", err)
	}
	return u, nil
}

// cleanID makes an id or address from a request fit to store and show: valid UTF-8,
// control characters replaced, at most maxUnknownID bytes.
func cleanID(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(strings.TrimSpace(s), "?"))
	if len(s) <= maxUnknownID {
		return s
	}
	cut := maxUnknownID
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
