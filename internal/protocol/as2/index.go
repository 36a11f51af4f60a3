package as2

import (
	"context"
	"fmt"
	"strings"

	"wharf/internal/module"
)

var _ module.MessageIndex = (*Runtime)(nil)

// FindMessages finds the messages received, refused or sent under the AS2 Message-ID ref,
// typed with or without its angle brackets.
func (rt *Runtime) FindMessages(ctx context.Context, ref string) ([]int64, error) {
	bare := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(ref), "<"), ">")
	if bare == "" {
		return []int64{}, nil
	}
	quoted := "<" + bare + ">"
	var out []int64
	err := rt.core.DB.Read(ctx, func(tx module.Tx) error {
		rows, err := tx.Query(ctx, `SELECT message_id FROM as2_inbound WHERE as2_message_id IN (?, ?) AND message_id IS NOT NULL
			UNION SELECT message_id FROM as2_refusals WHERE as2_message_id IN (?, ?)
			UNION SELECT message_id FROM as2_outbound WHERE as2_message_id IN (?, ?)`,
			quoted, bare, quoted, bare, quoted, bare)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("find messages by AS2 Message-ID: %w", err)
	}
	if out == nil {
		out = []int64{}
	}
	return out, nil
}

// MessageRefs gives each message's AS2 Message-ID and its receipt in a few words: of a
// message sent, the newest Message-ID it went out under; of one received or refused, the
// partner's.
func (rt *Runtime) MessageRefs(ctx context.Context, ids []int64) (map[int64]module.MessageRef, error) {
	out := map[int64]module.MessageRef{}
	if len(ids) == 0 {
		return out, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	err := rt.core.DB.Read(ctx, func(tx module.Tx) error {
		// Rows of one message come in id order, so the newest Message-ID of a message is
		// the one kept.
		rows, err := tx.Query(ctx, `SELECT message_id, as2_message_id, mdn_mode, outcome, mdn_verdict, mdn_signed
			FROM as2_outbound WHERE message_id IN (`+marks+`) ORDER BY message_id, id`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				id                          int64
				ref, mode, outcome, verdict string
				signed                      bool
			)
			if err := rows.Scan(&id, &ref, &mode, &outcome, &verdict, &signed); err != nil {
				rows.Close()
				return err
			}
			out[id] = module.MessageRef{Ref: ref, Receipt: sentReceipt(mode, outcome, verdict, signed)}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT message_id, as2_message_id, mdn_mode, mdn_signed, '' FROM as2_inbound WHERE message_id IN (`+marks+`)
			UNION ALL SELECT message_id, as2_message_id, mdn_mode, FALSE, disposition FROM as2_refusals WHERE message_id IN (`+marks+`)`,
			append(args, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id                 int64
				ref, mode, refused string
				signed             bool
			)
			if err := rows.Scan(&id, &ref, &mode, &signed, &refused); err != nil {
				return err
			}
			if _, sent := out[id]; !sent {
				out[id] = module.MessageRef{Ref: ref, Receipt: answeredReceipt(mode, signed, refused != "")}
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("AS2 Message-IDs of messages: %w", err)
	}
	return out, nil
}

// sentReceipt says what became of the receipt of a message we sent.
func sentReceipt(mode, outcome, verdict string, signed bool) string {
	kind := "unsigned"
	if signed {
		kind = "signed"
	}
	switch {
	case verdict == "accepted":
		return kind + ", accepted"
	case verdict == "refused":
		return kind + ", refused"
	case mode == "none":
		return "none asked"
	case outcome == "awaiting_mdn":
		return "awaited (" + mode + ")"
	case outcome == "failed":
		return "none came"
	}
	return "not yet"
}

// answeredReceipt says what receipt we answered a partner's message with.
func answeredReceipt(mode string, signed, refused bool) string {
	switch {
	case mode == "none":
		return "none asked"
	case refused:
		return "we refused (" + mode + ")"
	case signed:
		return "we signed (" + mode + ")"
	}
	return "we answered (" + mode + ")"
}
