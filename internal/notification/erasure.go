package notification

import (
	"context"
	"fmt"
	"strconv"

	"wharf/internal/alert"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

var _ module.MessageEraser = (*Runtime)(nil)

// EraseMessages clears the file name from the recorded alerts about erased messages: the
// subject's name and the "File name" detail of the body. What was already sent to a
// notifier's endpoint is beyond reach; the log keeps the rest (parties, status, reason).
func (rt *Runtime) EraseMessages(ctx context.Context, tx module.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	// An alert names its subject by text.
	in, args := module.IDList(ids)
	for i, id := range ids {
		args[i] = strconv.FormatInt(id, 10)
	}
	rows, err := tx.Query(ctx, `SELECT id, body FROM alerts WHERE subject_kind = 'message' AND subject_id IN `+in, args...)
	if err != nil {
		return fmt.Errorf("notification: read alerts of erased messages: %w", err)
	}
	type row struct{ id, body string }
	var found []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.body); err != nil {
			rows.Close()
			return fmt.Errorf("notification: read alerts of erased messages: %w", err)
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("notification: read alerts of erased messages: %w", err)
	}
	for _, r := range found {
		a, err := alert.Decode([]byte(r.body))
		if err != nil {
			return fmt.Errorf("notification: alert %s: %w", r.id, err)
		}
		a.Subject.Name = string(persistence.ErasedFileName)
		for i := range a.Details {
			if a.Details[i].Label == alert.FileNameDetail {
				a.Details[i].Value = string(persistence.ErasedFileName)
			}
		}
		body, err := alert.Encode(a)
		if err != nil {
			return fmt.Errorf("notification: alert %s: %w", r.id, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE alerts SET subject_name = ?, body = ? WHERE id = ?`, a.Subject.Name, string(body), r.id); err != nil {
			return fmt.Errorf("notification: erase alert %s: %w", r.id, err)
		}
	}
	return nil
}
