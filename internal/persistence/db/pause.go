package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

// A partner pause in the store. A refusal that will repeat for every message pauses its
// partner in the transaction of the delivery's outcome (CompleteDeliveries, or
// RefuseDeliveryPausing for a receipt that comes later): the pause row is inserted and the
// deliveries to the partner that wait (queued, retrying, stalled) through the partner
// protocols' targets become paused. A delivery that becomes due later (a dispatch, a
// redispatch, a redeliver) is paused by the next claim of its target instead of being
// attempted. Resuming deletes the row and queues the paused deliveries, due now.

const pauseCols = `partner, reason, actor, delivery_id, message_id, paused_at`

// heldTargets is the condition on a deliveries row that its target sends to partners
// (persistence.PartnerProtocols); the types are canonical constants, never input.
var heldTargets = func() string {
	types := make([]string, len(persistence.PartnerProtocols))
	for i, typ := range persistence.PartnerProtocols {
		types[i] = "'" + string(typ) + "'"
	}
	return `target IN (SELECT name FROM plugin_configs WHERE type IN (` + strings.Join(types, ", ") + `))`
}()

// sessionBlocked is the condition that a deliveries row belongs to a blocked ordered
// session.
const sessionBlocked = `(session_key <> '' AND EXISTS (SELECT 1 FROM sessions s
	WHERE s.key = deliveries.session_key AND s.blocked_by IS NOT NULL))`

// maxPauseReason bounds the stored reason of a pause (a refusal's reason is longer than
// an operator's may be).
const maxPauseReason = 1000

func scanPause(r rowScanner) (persistence.PartnerPause, error) {
	var p persistence.PartnerPause
	err := r.Scan(&p.Partner, &p.Reason, &p.Actor, &p.DeliveryID, &p.MessageID, timeCol{&p.PausedAt})
	return p, err
}

// PauseEvent is a partner a commit paused, or resumed (then At is the resumption's
// time).
type PauseEvent struct {
	persistence.PartnerPause
	Resumed bool
	At      time.Time
}

// OnPartnerPause sets fn to be called after each commit for every partner it paused or
// resumed. fn runs on the committing goroutine and must not block; nil removes it.
func (s *Store) OnPartnerPause(fn func(PauseEvent)) {
	if fn == nil {
		s.onPartnerPause.Store(nil)
		return
	}
	s.onPartnerPause.Store(&fn)
}

// pausedReason is the history reason of a delivery a pause holds.
func pausedReason(partner persistence.PartyName) string {
	return fmt.Sprintf("paused: sending to partner %s is paused", partner)
}

// pausePartner inserts p's pause unless the partner is paused already (the first reason
// stands) and holds the partner's waiting deliveries; it reports whether it paused.
func (t *txn) pausePartner(ctx context.Context, p persistence.PartnerPause) (bool, error) {
	p.Reason = persistence.SanitizeReason(p.Reason)
	if len(p.Reason) > maxPauseReason {
		p.Reason = p.Reason[:maxPauseReason]
	}
	p.Actor, p.PausedAt = actorOr(p.Actor), t.now
	rows, err := t.query(ctx, `INSERT INTO partner_pauses (`+pauseCols+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (partner) DO NOTHING RETURNING partner`,
		string(p.Partner), p.Reason, p.Actor, p.DeliveryID, p.MessageID, t.s.tv(t.now))
	inserted, err := collect(rows, err, func(r rowScanner) (s string, err error) { return s, r.Scan(&s) })
	if err != nil {
		return false, fmt.Errorf("pause partner %s: %w", p.Partner, err)
	}
	if len(inserted) == 0 {
		return false, nil
	}
	held, err := t.holdPaused(ctx, `message_id IN (SELECT id FROM messages WHERE to_party = ?)
		AND state IN ('queued', 'retrying', 'stalled')`, []any{string(p.Partner)}, pausedReason(p.Partner))
	if err != nil {
		return false, err
	}
	p.Waiting = len(held)
	t.pauses = append(t.pauses, PauseEvent{PartnerPause: p, At: t.now})
	changes := []audit.Change{{Path: "reason", New: jsonString(p.Reason)}}
	if p.DeliveryID != 0 {
		changes = append(changes, audit.Change{Path: "delivery_id", New: jsonInt(p.DeliveryID)})
	}
	if err := t.audit(operatorCtx(ctx, p.Actor), "pause", string(persistence.PartyPartner), string(p.Partner), string(p.Partner), changes); err != nil {
		return false, err
	}
	return true, nil
}

// holdPaused makes the deliveries through the partner protocols' targets that match cond
// paused, recording each with reason.
func (t *txn) holdPaused(ctx context.Context, cond string, args []any, reason string) ([]persistence.Delivery, error) {
	rows, err := t.query(ctx, `UPDATE deliveries SET previous_state = state, state = 'paused',
			next_attempt_at = NULL, next_wakeup_at = NULL, wakeups = 0, updated_at = ?
		WHERE `+cond+` AND `+heldTargets+`
		RETURNING `+transitionCols, append([]any{t.s.tv(t.now)}, args...)...)
	held, err := t.recordTransitions(rows, err, reason)
	if err != nil {
		return nil, fmt.Errorf("hold deliveries of a paused partner: %w", err)
	}
	return held, nil
}

// pauseRefused pauses the partner a refused delivery went to, with the refusal's reason.
func (t *txn) pauseRefused(ctx context.Context, d persistence.Delivery, reason string) error {
	var to persistence.PartyName
	err := t.queryRow(ctx, `SELECT m.to_party FROM messages m
		JOIN parties p ON p.name = m.to_party AND p.kind = ?
		WHERE m.id = ?`, string(persistence.PartyPartner), d.MessageID).Scan(&to)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // not sent to a partner: nothing to pause
	}
	if err != nil {
		return fmt.Errorf("read the partner of delivery %d: %w", d.ID, err)
	}
	_, err = t.pausePartner(ctx, persistence.PartnerPause{Partner: to, Reason: reason, DeliveryID: d.ID, MessageID: d.MessageID})
	return err
}

// pauseFree is the condition of a claim's picks, while a partner is paused, that the
// delivery d does not go to a paused partner. holdForPauses has paused those it saw, but
// on PostgreSQL a delivery committed between its statement and the picks would be seen
// by the picks alone.
const pauseFree = ` AND NOT EXISTS (SELECT 1 FROM messages pm JOIN partner_pauses pp ON pp.partner = pm.to_party
		WHERE pm.id = d.message_id)`

// holdForPauses pauses the due deliveries of target to paused partners, before a claim
// picks among them: those that became due after their partner was paused. It returns the
// condition the claim's picks add (pauseFree, or nothing when no partner is paused or the
// target sends to none). Without a pause it costs one read of the (empty) pause table.
func (t *txn) holdForPauses(ctx context.Context, target persistence.InstanceName) (string, error) {
	rows, err := t.query(ctx, `SELECT partner FROM partner_pauses`)
	partners, err := collect(rows, err, func(r rowScanner) (p persistence.PartyName, err error) { return p, r.Scan(&p) })
	if err != nil {
		return "", fmt.Errorf("read partner pauses: %w", err)
	}
	if len(partners) == 0 {
		return "", nil
	}
	var typ persistence.PluginType
	err = t.queryRow(ctx, `SELECT type FROM plugin_configs WHERE name = ?`, target).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !slices.Contains(persistence.PartnerProtocols, typ)) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the type of %s: %w", target, err)
	}
	for _, p := range partners {
		if _, err := t.holdPaused(ctx, `target = ? AND state IN ('queued', 'retrying')
			AND message_id IN (SELECT id FROM messages WHERE to_party = ?)`,
			[]any{target, string(p)}, pausedReason(p)); err != nil {
			return "", err
		}
	}
	return pauseFree, nil
}

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
