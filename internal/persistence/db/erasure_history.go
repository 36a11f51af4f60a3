package db

import (
	"context"
	"fmt"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// erasedReason replaces a history reason or a delivery's last error that named an
// erased message's file (a file writer's "written as …").
const erasedReason = "(erased: this text named the document)"

// eraseMentions rewrites the reasons of the messages' history lines that name the
// original file name: the received line gets the erased name, any other (a target's
// answer such as the path it wrote) erasedReason, and so does a delivery's last error
// and every reason a receiving side gave in a downstream status line.
// History stays append-only otherwise: the lines, their kinds, states, times and actors
// stay as they were.
func (t *txn) eraseMentions(ctx context.Context, ids []int64) error {
	in, args := module.IDList(ids)
	rows, err := t.query(ctx, `SELECT `+messageCols+` FROM messages WHERE id IN `+in, args...)
	msgs, err := collect(rows, err, scanMessage)
	if err != nil {
		return fmt.Errorf("read messages to erase: %w", err)
	}
	for _, m := range msgs {
		old := persistence.SanitizeReason(receivedReason(m))
		like := likePattern(string(m.OriginalFileName))
		m.OriginalFileName = persistence.ErasedFileName
		if _, err := t.exec(ctx, `UPDATE message_history SET reason = ? WHERE message_id = ? AND kind = ? AND reason = ?`,
			persistence.SanitizeReason(receivedReason(m)), m.ID, persistence.HistoryReceived, old); err != nil {
			return fmt.Errorf("erase the received line of message %d: %w", m.ID, err)
		}
		if _, err := t.exec(ctx, `UPDATE message_history SET reason = ? WHERE message_id = ? AND LOWER(reason) LIKE ? ESCAPE '\'`,
			erasedReason, m.ID, like); err != nil {
			return fmt.Errorf("erase the history of message %d: %w", m.ID, err)
		}
		// What a receiving side said about the document (a callback's reason, an MDN's
		// note) is its own words and may quote the document.
		if _, err := t.exec(ctx, `UPDATE message_history SET reason = ? WHERE message_id = ? AND kind = ? AND reason <> ''`,
			erasedReason, m.ID, persistence.HistoryDownstreamStatus); err != nil {
			return fmt.Errorf("erase the downstream reasons of message %d: %w", m.ID, err)
		}
		if _, err := t.exec(ctx, `UPDATE deliveries SET last_error = ? WHERE message_id = ? AND LOWER(last_error) LIKE ? ESCAPE '\'`,
			erasedReason, m.ID, like); err != nil {
			return fmt.Errorf("erase the deliveries' errors of message %d: %w", m.ID, err)
		}
	}
	return nil
}
