package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
// target sends to none). Without a pause it costs nothing while the store knows that no
// partner is paused (pause_cache.go), else one read of the (empty) pause table.
func (t *txn) holdForPauses(ctx context.Context, target persistence.InstanceName) (string, error) {
	if t.s.pauseCache.noPauses() {
		return "", nil
	}
	gen, readAt := t.s.pauseCache.generation(), time.Now()
	rows, err := t.query(ctx, `SELECT partner FROM partner_pauses`)
	partners, err := collect(rows, err, func(r rowScanner) (p persistence.PartyName, err error) { return p, r.Scan(&p) })
	if err != nil {
		return "", fmt.Errorf("read partner pauses: %w", err)
	}
	if len(partners) == 0 {
		t.s.pauseCache.rememberNone(gen, readAt)
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
