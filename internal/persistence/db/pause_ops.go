package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

// The operator's side of partner pauses (pause.go): pausing by hand, resuming, and
// reading the pauses with the deliveries they hold.

// sessionBlocked is the condition that a deliveries row belongs to a blocked ordered
// session.
const sessionBlocked = `(session_key <> '' AND EXISTS (SELECT 1 FROM sessions s
	WHERE s.key = deliveries.session_key AND s.blocked_by IS NOT NULL))`

// PausePartner pauses sending to a partner by hand, with the operator's reason, holding
// its waiting deliveries. A partner paused already is ErrConflict; an unknown one
// ErrNotFound.
func (s *Store) PausePartner(ctx context.Context, partner persistence.PartyName, reason, actor string) (persistence.PartnerPause, error) {
	if err := check("partner", partner, persistence.ParsePartyName); err != nil {
		return persistence.PartnerPause{}, fmt.Errorf("pause partner: %w", err)
	}
	if err := persistence.CheckPauseReason(reason); err != nil {
		return persistence.PartnerPause{}, fmt.Errorf("pause partner %s: %w", partner, err)
	}
	var out persistence.PartnerPause
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(actor)
		if err := t.partnerExists(ctx, partner); err != nil {
			return err
		}
		ok, err := t.pausePartner(ctx, persistence.PartnerPause{Partner: partner, Reason: reason, Actor: t.actor})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("partner %s is paused already: %w", partner, persistence.ErrConflict)
		}
		out, err = t.partnerPause(ctx, partner)
		return err
	})
	if err != nil {
		return persistence.PartnerPause{}, fmt.Errorf("pause partner %s: %w", partner, err)
	}
	return out, nil
}

// ResumePartner ends a partner's pause: the pause row goes and its paused deliveries are
// queued, due now (parked, those of a blocked ordered session), with history naming
// actor; it returns the queued ones for their wake-ups. A
// partner that is not paused is ErrConflict; an unknown one ErrNotFound.
func (s *Store) ResumePartner(ctx context.Context, partner persistence.PartyName, actor string) ([]persistence.Delivery, error) {
	if err := check("partner", partner, persistence.ParsePartyName); err != nil {
		return nil, fmt.Errorf("resume partner: %w", err)
	}
	var out []persistence.Delivery
	err := s.write(ctx, func(t *txn) error {
		t.actor = actorOr(actor)
		if err := t.partnerExists(ctx, partner); err != nil {
			return err
		}
		rows, err := t.query(ctx, `DELETE FROM partner_pauses WHERE partner = ? RETURNING `+pauseCols, string(partner))
		gone, err := collect(rows, err, scanPause)
		if err != nil {
			return err
		}
		if len(gone) == 0 {
			return fmt.Errorf("partner %s is not paused: %w", partner, persistence.ErrConflict)
		}
		// A delivery of an ordered session that a failure blocked meanwhile goes behind the
		// blocking one, parked, as a dispatch into a blocked session does; the others are
		// queued, due now.
		now := t.s.tv(t.now)
		ofPartner := `state = 'paused' AND message_id IN (SELECT id FROM messages WHERE to_party = ?)`
		rows, err = t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'parked',
				next_attempt_at = NULL, next_wakeup_at = NULL, wakeups = 0, updated_at = ?
			WHERE `+ofPartner+` AND `+sessionBlocked+`
			RETURNING `+transitionCols, now, string(partner))
		parked, err := collect(rows, err, scanTransition)
		if err != nil {
			return fmt.Errorf("park paused deliveries: %w", err)
		}
		rows, err = t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'queued',
				next_attempt_at = ?, next_wakeup_at = ?, wakeups = 0, updated_at = ?
			WHERE `+ofPartner+`
			RETURNING `+transitionCols, now, t.s.tv(t.now.Add(WakeupGrace)), now, string(partner))
		queued, err := collect(rows, err, scanTransition)
		if err != nil {
			return fmt.Errorf("queue paused deliveries: %w", err)
		}
		sortTransitions(queued)
		trs := append(slices.Clone(parked), queued...)
		sortTransitions(trs)
		reason := fmt.Sprintf("resumed: sending to partner %s resumed by %s", partner, t.actor)
		for _, tr := range trs {
			t.changed(tr, reason, t.actor, time.Time{})
		}
		out = deliveriesOf(queued)
		t.pauses = append(t.pauses, PauseEvent{PartnerPause: gone[0], Resumed: true, At: t.now})
		return t.audit(operatorCtx(ctx, t.actor), "resume", string(persistence.PartyPartner), string(partner), string(partner),
			[]audit.Change{{Path: "reason", Old: jsonString(gone[0].Reason)}, {Path: "queued", New: jsonInt(int64(len(queued)))},
				{Path: "parked", New: jsonInt(int64(len(parked)))}})
	})
	if err != nil {
		return nil, fmt.Errorf("resume partner %s: %w", partner, err)
	}
	return out, nil
}

// GetPartnerPause reads a partner's pause with its waiting deliveries; ErrNotFound when
// the partner is not paused.
func (s *Store) GetPartnerPause(ctx context.Context, partner persistence.PartyName) (persistence.PartnerPause, error) {
	var out persistence.PartnerPause
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = t.partnerPause(ctx, partner)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("pause of partner %s: %w", partner, err)
	}
	return out, nil
}

// ListPartnerPauses lists the paused partners, longest paused first, each with its
// waiting deliveries.
func (s *Store) ListPartnerPauses(ctx context.Context) ([]persistence.PartnerPause, error) {
	var out []persistence.PartnerPause
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT `+pauseCols+` FROM partner_pauses ORDER BY paused_at, partner`)
		if out, err = collect(rows, err, scanPause); err != nil {
			return err
		}
		for i := range out {
			if out[i].Waiting, err = t.countPaused(ctx, out[i].Partner); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list partner pauses: %w", err)
	}
	return out, nil
}

func (t *txn) partnerPause(ctx context.Context, partner persistence.PartyName) (persistence.PartnerPause, error) {
	p, err := scanPause(t.queryRow(ctx, `SELECT `+pauseCols+` FROM partner_pauses WHERE partner = ?`, string(partner)))
	if err != nil {
		return p, notFound(err, "pause of partner %s", partner)
	}
	p.Waiting, err = t.countPaused(ctx, partner)
	return p, err
}

// readPause sets a partner's activity's pause while it is paused.
func (t *txn) readPause(ctx context.Context, a *persistence.PartnerActivity) error {
	p, err := t.partnerPause(ctx, a.Partner)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	a.Pause = &p
	return nil
}

// countPaused counts the paused deliveries to partner.
func (t *txn) countPaused(ctx context.Context, partner persistence.PartyName) (int, error) {
	var n int
	err := t.queryRow(ctx, `SELECT COUNT(*) FROM deliveries WHERE state = 'paused'
		AND message_id IN (SELECT id FROM messages WHERE to_party = ?)`, string(partner)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count paused deliveries of %s: %w", partner, err)
	}
	return n, nil
}

func jsonInt(n int64) json.RawMessage { return json.RawMessage(strconv.FormatInt(n, 10)) }

func (t *txn) partnerExists(ctx context.Context, partner persistence.PartyName) error {
	var id int64
	err := t.queryRow(ctx, `SELECT id FROM parties WHERE kind = ? AND name = ?`, string(persistence.PartyPartner), string(partner)).Scan(&id)
	return notFound(err, "partner %s", partner)
}
