package receiver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// refusalRow is one row of as2_refusals.
type refusalRow struct {
	Instance     persistence.InstanceName
	AS2From      string
	AS2To        string
	AS2MessageID string
	Partner      string
	Organization string
	MessageID    int64
	Disposition  string
	Reason       string
	MDNMode      MDNMode
	MDNMessageID string
	BodySize     int64 // -1 when the body was not read
	BodyKept     int64
	BodyWithheld string // why no body was kept, "" when it was
}

// insertRefusal records the first refusal of a (AS2-From, Message-ID). Another copy
// refused at the same moment and recorded first takes this one in its count (its
// message stays, a record of its own).
func insertRefusal(ctx context.Context, tx module.Tx, r *refusalRow) error {
	now := tx.Time(tx.Now())
	_, err := tx.Exec(ctx, `INSERT INTO as2_refusals (instance, as2_from, as2_to, as2_message_id, partner, organization,
		message_id, disposition, reason, mdn_mode, mdn_message_id, body_size, body_kept, body_withheld, count, first_at, last_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
		ON CONFLICT (as2_from, as2_message_id) DO UPDATE SET count = as2_refusals.count + 1, last_at = excluded.last_at`,
		r.Instance, r.AS2From, r.AS2To, r.AS2MessageID, r.Partner, r.Organization, r.MessageID, r.Disposition, r.Reason,
		string(r.MDNMode), r.MDNMessageID, r.BodySize, r.BodyKept, r.BodyWithheld, now, now)
	if err != nil {
		return fmt.Errorf("insert AS2 refusal %s: %w", r.AS2MessageID, err)
	}
	return nil
}

// RefusalRecord is what the receiver kept of a message it refused, for the message's
// AS2 panel.
type RefusalRecord struct {
	AS2MessageID string `json:"as2_message_id"`
	AS2From      string `json:"as2_from"`
	AS2To        string `json:"as2_to"`
	Instance     string `json:"instance"`
	// Disposition is the one the MDN carried; empty when no MDN was written.
	Disposition string `json:"disposition"`
	Reason      string `json:"reason"`
	// MDNMode is what the partner asked for: none, sync or async.
	MDNMode      string `json:"mdn_mode"`
	MDNMessageID string `json:"mdn_message_id,omitempty"`
	// BodySize is the raw body's size as received (-1 when it was not read); BodyKept
	// how much of it the received stage holds, less when BodyCutShort.
	BodySize     int64 `json:"body_size"`
	BodyKept     int64 `json:"body_kept"`
	BodyCutShort bool  `json:"body_cut_short"`
	// BodyWithheld says why no raw body was kept (the partner's refused-body budget was
	// used up); empty when it was kept.
	BodyWithheld string `json:"body_withheld,omitempty"`
	// Count is how many times this Message-ID was refused; the last time and reason are
	// LastAt and Reason.
	Count   int64     `json:"count"`
	FirstAt time.Time `json:"first_at"`
	LastAt  time.Time `json:"last_at"`
}

// FindRefusal returns what the receiver kept of the refused message messageID; an error
// wrapping persistence.ErrNotFound when no AS2 receiver refused it.
func FindRefusal(ctx context.Context, db module.SQL, messageID int64) (RefusalRecord, error) {
	var rec RefusalRecord
	err := db.Read(ctx, func(tx module.Tx) error {
		err := tx.QueryRow(ctx, `SELECT as2_message_id, as2_from, as2_to, instance, disposition, reason, mdn_mode,
			mdn_message_id, body_size, body_kept, body_withheld, count, first_at, last_at FROM as2_refusals WHERE message_id = ?
			ORDER BY id LIMIT 1`, messageID).Scan(&rec.AS2MessageID, &rec.AS2From, &rec.AS2To, &rec.Instance,
			&rec.Disposition, &rec.Reason, &rec.MDNMode, &rec.MDNMessageID, &rec.BodySize, &rec.BodyKept, &rec.BodyWithheld, &rec.Count,
			tx.ScanTime(&rec.FirstAt), tx.ScanTime(&rec.LastAt))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("AS2 refusal of message %d: %w", messageID, persistence.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("AS2 refusal of message %d: %w", messageID, err)
		}
		rec.BodyCutShort = rec.BodySize > rec.BodyKept && rec.BodyWithheld == ""
		return nil
	})
	return rec, err
}
