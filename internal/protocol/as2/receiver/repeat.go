package receiver

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

// Values of as2_inbound.duplicate_content.
const (
	contentWarned  = "warned"  // delivered again and flagged
	contentRefused = "refused" // not delivered again; message_id names the first copy's message
)

// duplicateContentCheck is the profile's policy on a document the partner sent before
// under another Message-ID (a resend after a lost MDN, as OpenAS2 makes them).
type duplicateContentCheck struct {
	refuse, warn bool
	window       time.Duration
}

func contentCheck(r profile.Remote) duplicateContentCheck {
	return duplicateContentCheck{
		refuse: r.DuplicateContent == profile.DuplicateRefuse,
		warn:   r.DuplicateContent == profile.DuplicateWarn,
		window: time.Duration(r.DuplicateContentWindowH) * time.Hour,
	}
}

// contentDigest is the hex SHA-256 of a document, as the core computes a message's.
func contentDigest(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// first finds, under the policy, the earliest row of the partner with the row's content
// received since the window began; found is false when the policy accepts repeats or
// none was received. Two requests carrying the same document never both miss each
// other: on SQLite the single writer serializes them, on PostgreSQL a transaction lock
// on (partner, content) is taken before the lookup and held until the commit that
// inserts the row, and a write transaction there reads what committed before each
// statement.
func (c duplicateContentCheck) first(ctx context.Context, tx module.Tx, dialect string, row *inboundRow, now time.Time) (inboundRow, bool, error) {
	if !c.refuse && !c.warn || c.window <= 0 || row.ContentSHA256 == "" {
		return inboundRow{}, false, nil
	}
	if dialect == "postgres" {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(?)`, contentLockKey(row.Partner, row.ContentSHA256)); err != nil {
			return inboundRow{}, false, fmt.Errorf("lock the content of AS2 message %s: %w", row.AS2MessageID, err)
		}
	}
	r, err := scanInbound(tx, tx.QueryRow(ctx, `SELECT `+inboundCols+` FROM as2_inbound
		WHERE partner = ? AND content_sha256 = ? AND received_at >= ? ORDER BY id LIMIT 1`,
		row.Partner, row.ContentSHA256, tx.Time(now.Add(-c.window))))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return inboundRow{}, false, nil
	case err != nil:
		return inboundRow{}, false, fmt.Errorf("look up the content of AS2 message %s: %w", row.AS2MessageID, err)
	}
	return r, true, nil
}

// contentLockKey names the advisory lock of a partner's document.
func contentLockKey(partner, digest string) int64 {
	sum := sha256.Sum256([]byte("as2-content\x00" + partner + "\x00" + digest))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// takeRepeat answers a document the partner sent before, which the profile refuses to
// deliver again: its row (reserved, naming the first copy's message) is answered with a
// positive MDN, since the partner's document is here already, and the first message's
// history records the copy. Nothing is stored or dispatched.
func (rc *Receiver) takeRepeat(ctx context.Context, w http.ResponseWriter, x *exchange, row *inboundRow, first inboundRow) {
	ctx = logging.WithMessageID(ctx, first.MessageID)
	row.MessageID = first.MessageID
	var (
		mdn builtMDN
		err error
	)
	if row.MDNMode != MDNNone {
		mdn, err = rc.rowMDN(row, mdnSigner(row, x.in.Signer))
	}
	if err == nil {
		err = rc.record(ctx, row, mdn)
	}
	if err != nil {
		if rerr := release(context.WithoutCancel(ctx), rc.deps.DB, *row); rerr != nil {
			rc.log.ErrorContext(ctx, "release AS2 reservation", "as2_message_id", row.AS2MessageID, "err", rerr)
		}
		rc.unavailable(ctx, w, x, "answer the repeated AS2 message", err)
		return
	}
	rc.log.InfoContext(ctx, "AS2 message repeats a document the partner sent before; not delivered again",
		"as2_message_id", row.AS2MessageID, "as2_from", row.AS2From, "first_as2_message_id", first.AS2MessageID)
	reason := fmt.Sprintf("the same document received again from %s under AS2 Message-ID %s; answered processed, not delivered again (duplicate_content refuse)",
		row.Partner, row.AS2MessageID)
	rc.noteHistory(ctx, first.MessageID, reason)
	rc.respond(ctx, w, x, row, true)
}

// noteWarnedRepeat records on a repeat that was delivered again which message carried
// the document first.
func (rc *Receiver) noteWarnedRepeat(ctx context.Context, row *inboundRow, first inboundRow) {
	if row.MessageID == 0 || row.DuplicateContent != contentWarned {
		return
	}
	reason := fmt.Sprintf("the same document was received from %s under AS2 Message-ID %s", row.Partner, first.AS2MessageID)
	if first.MessageID != 0 {
		reason += fmt.Sprintf(" (message %d)", first.MessageID)
	}
	reason += "; delivered again (duplicate_content warn)"
	rc.noteHistory(logging.WithMessageID(context.WithoutCancel(ctx), row.MessageID), row.MessageID, reason)
}

func (rc *Receiver) noteHistory(ctx context.Context, messageID int64, reason string) {
	if messageID == 0 {
		return
	}
	if err := rc.deps.Store.NoteHistory(ctx, messageID, persistence.HistoryDuplicateReceived, reason, "as2:"+string(rc.name)); err != nil {
		rc.log.WarnContext(ctx, "note the repeated document in the message's history", "err", err)
	}
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// repeatsOf completes a message's record with what duplicate_content noted: the first
// copy of a warned repeat, and the copies refused as repeats of this one.
func repeatsOf(ctx context.Context, tx module.Tx, row inboundRow, rec *InboundRecord) error {
	if row.DuplicateContent != "" {
		rec.DuplicateContent = row.DuplicateContent
		var first sql.NullInt64
		err := tx.QueryRow(ctx, `SELECT message_id FROM as2_inbound WHERE id = ?`, row.DuplicateOf).Scan(&first)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("first copy: %w", err)
		}
		rec.DuplicateOfMessageID = first.Int64
	}
	rows, err := tx.Query(ctx, `SELECT as2_message_id FROM as2_inbound
		WHERE message_id = ? AND duplicate_content = ? ORDER BY id LIMIT 100`, row.MessageID, contentRefused)
	if err != nil {
		return fmt.Errorf("repeats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("repeats: %w", err)
		}
		rec.RepeatsNotDelivered = append(rec.RepeatsNotDelivered, id)
	}
	return rows.Err()
}

// finishRepeat answers a refused repeat whose request was interrupted before its row was
// answered, now taken over by a resend of the same Message-ID. When the first copy's row
// is gone (its message was never stored), the reservation is dropped and the partner
// asked to send again, so the next copy is taken afresh.
func (rc *Receiver) finishRepeat(ctx context.Context, w http.ResponseWriter, x *exchange, row *inboundRow) {
	var first inboundRow
	err := rc.deps.DB.Read(ctx, func(tx module.Tx) error {
		var err error
		first, err = scanInbound(tx, tx.QueryRow(ctx, `SELECT `+inboundCols+` FROM as2_inbound WHERE id = ?`, row.DuplicateOf))
		return err
	})
	if err == nil && first.State == stateAnswered && first.MessageID != 0 {
		rc.takeRepeat(ctx, w, x, row, first)
		return
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		rc.unavailable(ctx, w, x, "look up the first copy of the AS2 message", err)
		return
	}
	if rerr := release(context.WithoutCancel(ctx), rc.deps.DB, *row); rerr != nil {
		rc.log.ErrorContext(ctx, "release AS2 reservation", "as2_message_id", row.AS2MessageID, "err", rerr)
	}
	rc.busy(ctx, w, x, "the same document is being processed under another Message-ID; send it again later")
}
