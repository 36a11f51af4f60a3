package db

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// Redispatch adds deliveries (queued, due now) for the targets the message lacks and
// requeues its queued and stalled ones (due now, wake-ups reset); it returns every
// delivery of the message that is now due. A message its source still holds (stage
// accepted) is dispatched by it for the first time: its history says dispatched rather
// than redispatch requested.
func (s *Store) Redispatch(ctx context.Context, messageID int64, targets []persistence.InstanceName, sessions map[persistence.InstanceName]persistence.DeliverySession, overrides map[persistence.InstanceName]*retry.Policy, actor string) ([]persistence.Delivery, error) {
	var want []persistence.InstanceName
	for i, tg := range targets {
		if err := check(fmt.Sprintf("targets[%d]", i), tg, persistence.ParseInstanceName); err != nil {
			return nil, fmt.Errorf("redispatch message %d: %w", messageID, err)
		}
		if !slices.Contains(want, tg) {
			want = append(want, tg)
		}
	}
	var out []persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(actor)
		var stage persistence.MessageStage
		var refusal persistence.Refusal
		var from, to persistence.PartyName
		var corr, origin string
		err := t.queryRow(ctx, `SELECT stage, refusal, from_party, to_party, correlation_id, origin_event_id FROM messages WHERE id = ?`,
			messageID).Scan(&stage, &refusal, &from, &to, &corr, &origin)
		if err != nil {
			return notFound(err, "message %d", messageID)
		}
		if err := t.refuseErased(ctx, messageID); err != nil {
			return err
		}
		if refusal != persistence.RefusalNone && len(want) > 0 {
			return fmt.Errorf("message %d was refused by its source and gets no deliveries: %w", messageID, persistence.ErrConflict)
		}
		rows, err := t.query(ctx, `SELECT target FROM deliveries WHERE message_id = ?`, messageID)
		have, err := collect(rows, err, func(r rowScanner) (tg persistence.InstanceName, err error) { return tg, r.Scan(&tg) })
		if err != nil {
			return err
		}
		now, wake := s.tv(t.now), s.tv(t.now.Add(WakeupGrace))
		var added []persistence.InstanceName
		var rowsToAdd [][]any
		var notes []deliveryNote
		joined := make(map[persistence.InstanceName]persistence.DeliverySession)
		for _, tg := range want {
			if !slices.Contains(have, tg) && sessions[tg].Key != "" {
				joined[tg] = sessions[tg]
			}
		}
		// As in a dispatch, the sessions are locked before the deliveries are inserted.
		blocked, err := t.joinSessions(ctx, []persistence.NewMessage{{Dispatch: true, Sessions: joined,
			Message: persistence.Message{From: from, To: to}}})
		if err != nil {
			return err
		}
		for _, tg := range want {
			if !slices.Contains(have, tg) {
				policy, err := policyValue(overrides[tg])
				if err != nil {
					return err
				}
				added = append(added, tg)
				ses := joined[tg]
				st, next, wakeAt, note := persistence.DeliveryQueued, any(now), any(wake), ses.Note
				if by, ok := blocked[ses.Key]; ok {
					st, next, wakeAt = persistence.DeliveryParked, nil, nil
					note = joinNote(note, fmt.Sprintf("parked: session blocked by delivery %d", by))
				}
				rowsToAdd = append(rowsToAdd, []any{messageID, tg, st, next, wakeAt, ses.Key, now, now, policy, corr, origin})
				if note != "" {
					notes = append(notes, deliveryNote{messageID, tg, st, note})
				}
			}
		}
		t.knowIDs(messageID, corr, origin)
		if err := t.insertRows(ctx, deliveryInsert, deliveryInsertCols, rowsToAdd); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("message %d is being redispatched concurrently: %w", messageID, persistence.ErrConflict)
			}
			return fmt.Errorf("add deliveries: %w", err)
		}
		if err := t.noteDeliveries(ctx, notes); err != nil {
			return err
		}
		rows, err = t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'queued',
				next_attempt_at = ?, next_wakeup_at = ?, wakeups = 0, updated_at = ?
			WHERE message_id = ? AND state IN ('queued', 'stalled')
			RETURNING `+transitionCols, now, wake, now, messageID)
		trs, err := collect(rows, err, scanTransition)
		if err != nil {
			return fmt.Errorf("requeue deliveries: %w", err)
		}
		sortTransitions(trs)
		// Last of the writes before settling, so the message's row lock is taken after the
		// delivery row locks, in the same order as every other transaction takes them.
		if stage == persistence.StageAccepted {
			if _, err := t.exec(ctx, `UPDATE messages SET stage = 'dispatched' WHERE id = ? AND stage = 'accepted'`, messageID); err != nil {
				return err
			}
		}

		kind, reason := persistence.HistoryRedispatchRequested, redispatchReason(added, trs)
		if stage == persistence.StageAccepted {
			kind, reason = persistence.HistoryDispatched, dispatchedReason(want, refusal)
		}
		t.note(historyRow{messageID: messageID, kind: kind, reason: reason, actor: t.actor})
		for _, tr := range trs {
			if tr.from != tr.d.State {
				t.changed(tr, "redispatch requested", t.actor, time.Time{})
			}
		}
		t.touch(messageID)
		out = deliveriesOf(trs)
		if t.actor == systemActor {
			return nil // the source's own first dispatch, not an operator's action
		}
		return t.audit(operatorCtx(ctx, t.actor), "redispatch", "message", strconv.FormatInt(messageID, 10),
			strconv.FormatInt(messageID, 10), []audit.Change{{Path: "result", New: jsonString(reason)}})
	})
	if err != nil {
		return nil, fmt.Errorf("redispatch message %d: %w", messageID, err)
	}
	return out, nil
}

func redispatchReason(added []persistence.InstanceName, requeued []transition) string {
	var parts []string
	if len(added) > 0 {
		names := make([]string, len(added))
		for i, tg := range added {
			names[i] = string(tg)
		}
		parts = append(parts, "added "+strings.Join(names, ", "))
	}
	n := 0
	for _, tr := range requeued {
		if !slices.Contains(added, tr.d.Target) {
			n++
		}
	}
	if n > 0 {
		parts = append(parts, fmt.Sprintf("requeued %d", n))
	}
	if len(parts) == 0 {
		return "nothing to requeue"
	}
	return strings.Join(parts, "; ")
}

// redeliverable lists the states an operator may send again from.
var redeliverable = persistence.ActionRedeliver.From()

// Redeliver requeues one failed, stalled, retrying or delivered delivery, due now; any
// other state is ErrConflict. The history's redeliver_requested line and the audit entry
// record mode.
func (s *Store) Redeliver(ctx context.Context, deliveryID int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error) {
	if _, err := persistence.ParseResendMode(string(mode)); err != nil {
		return persistence.Delivery{}, fmt.Errorf("redeliver delivery %d: %w", deliveryID, &persistence.FieldError{Field: "resend", Message: err.Error()})
	}
	if mode == "" {
		mode = persistence.ResendSame
	}
	var out persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(actor)
		var state persistence.DeliveryState
		var messageID int64
		err := t.queryRow(ctx, `SELECT state, message_id FROM deliveries WHERE id = ?`, deliveryID).Scan(&state, &messageID)
		if err != nil {
			return notFound(err, "delivery %d", deliveryID)
		}
		if err := t.refuseErased(ctx, messageID); err != nil {
			return err
		}
		if !slices.Contains(redeliverable, state) {
			return fmt.Errorf("delivery %d is %s; only failed, stalled, retrying or delivered deliveries can be redelivered: %w",
				deliveryID, state, persistence.ErrConflict)
		}
		now := s.tv(t.now)
		rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'queued',
				next_attempt_at = ?, next_wakeup_at = ?, wakeups = 0, ack_deadline = NULL, updated_at = ?
			WHERE id = ? AND state = ?
			RETURNING `+transitionCols, now, s.tv(t.now.Add(WakeupGrace)), now, deliveryID, state)
		trs, err := collect(rows, err, scanTransition)
		if err != nil {
			return err
		}
		if len(trs) == 0 {
			return fmt.Errorf("delivery %d changed while it was being redelivered: %w", deliveryID, persistence.ErrConflict)
		}
		t.note(historyRow{messageID: messageID, deliveryID: deliveryID, kind: persistence.HistoryRedeliverRequested,
			from: string(state), to: string(persistence.DeliveryQueued), reason: mode.Reason(), actor: t.actor})
		t.changed(trs[0], "redeliver requested", t.actor, time.Time{})
		out = trs[0].d
		return t.audit(operatorCtx(ctx, t.actor), "redeliver", "delivery", strconv.FormatInt(deliveryID, 10),
			fmt.Sprintf("message %d to %s", messageID, out.Target), []audit.Change{{Path: "state",
				Old: jsonString(string(state)), New: jsonString(string(persistence.DeliveryQueued))},
				{Path: "resend", New: jsonString(string(mode))}})
	})
	if err != nil {
		return persistence.Delivery{}, fmt.Errorf("redeliver delivery %d: %w", deliveryID, err)
	}
	return out, nil
}

// operatorCtx makes actor the audit actor of ctx unless ctx names one already: operator
// methods take their actor as an argument, for the history lines.
func operatorCtx(ctx context.Context, actor string) context.Context {
	if audit.ActorFrom(ctx) == audit.SystemActor && actor != "" {
		return audit.WithActor(ctx, actor)
	}
	return ctx
}

// jsonString encodes s as a JSON string for an audit change.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
