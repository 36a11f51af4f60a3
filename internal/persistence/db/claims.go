package db

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// claimable is the one rule for a delivery a worker may take now, used by claims and by
// the wake-up sweep alike: due (queued, or retrying with its next attempt reached), and
// not behind an earlier delivery of its session that is neither delivered nor skipped.
// The delivery is d; the one argument is now. The NOT EXISTS repeats the predicate of the
// partial index deliveries_session, so both planners probe that small index.
//
// The state condition is written as an IN list first so that both planners look up
// (target, state) in deliveries_due for each of the two states, instead of scanning every
// delivery of the target.
const claimable = `d.state IN ('queued', 'retrying') AND (d.state = 'queued' OR d.next_attempt_at <= ?)
	AND ` + sessionFree

// sessionFree is the session half of claimable: d is not behind an unfinished earlier
// delivery of its session.
const sessionFree = `(d.session_key = '' OR NOT EXISTS (
		SELECT 1 FROM deliveries e
		WHERE e.session_key = d.session_key AND e.id < d.id
		AND e.session_key <> '' AND e.state NOT IN ('delivered', 'skipped')))`

const maxClaim = 1000

// claimLimit is the LIMIT of a claim's picks. SQLite compiles a claim again whenever a bare
// bound LIMIT changes value, and the count a claim asks for changes from one claim to the
// next; a cast makes the limit an expression, which it compiles once.
const claimLimit = "CAST(? AS INTEGER)"

// newTokenPrefix is the start of the tokens of one claim: the store's holder (see
// Options.Holder) and a fresh random part.
func (s *Store) newTokenPrefix() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return s.holderPrefix() + hex.EncodeToString(b) + "."
}

// ClaimDeliveries takes up to n claimable deliveries of target, oldest first, in one
// statement: on PostgreSQL the candidates are locked with FOR UPDATE SKIP LOCKED, so
// concurrent claimers take disjoint sets without waiting for each other. Each claimed
// delivery gets state delivering, a token of its own (a fresh random prefix and its id),
// a lease, one more attempt and its wake-up count reset.
func (s *Store) ClaimDeliveries(ctx context.Context, target persistence.InstanceName, n int, lease time.Duration, now time.Time) ([]persistence.Claim, error) {
	switch {
	case n <= 0:
		return nil, fmt.Errorf("claim deliveries of %q: count %d is not positive", target, n)
	case lease <= 0:
		return nil, fmt.Errorf("claim deliveries of %q: lease %v is not positive", target, lease)
	}
	if err := check("target", target, persistence.ParseInstanceName); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	n = min(n, maxClaim)
	now = utc(now)
	var claims []persistence.Claim
	err := s.write(ctx, func(t *txn) error {
		claims = nil
		unpaused, err := t.holdForPauses(ctx, target)
		if err != nil {
			return err
		}
		// The queued and the due retrying deliveries are picked apart, each read in
		// index order up to the limit, so a long backlog does not make each claim sort
		// it; the two sets are merged oldest first. This is claimable, split in two.
		with := `WITH picked AS MATERIALIZED (
				SELECT id FROM (
					SELECT d.id FROM deliveries d
					WHERE d.target = ? AND d.state = 'queued' AND ` + sessionFree + unpaused + `
					ORDER BY d.id LIMIT ` + claimLimit + s.skipLocked + `
				) q
				UNION ALL
				SELECT id FROM (
					SELECT d.id FROM deliveries d
					WHERE d.target = ? AND d.state = 'retrying' AND d.next_attempt_at <= ? AND ` + sessionFree + unpaused + `
					ORDER BY d.id LIMIT ` + claimLimit + s.skipLocked + `
				) r
				ORDER BY id LIMIT ` + claimLimit + `
			)`
		update := `UPDATE deliveries SET previous_state = state, state = 'delivering',
				claim_token = CAST(? AS TEXT) || CAST(id AS TEXT), lease_until = ?,
				attempts = attempts + 1, wakeups = 0,
				next_attempt_at = NULL, next_wakeup_at = NULL, ack_deadline = NULL, updated_at = ?
			WHERE id IN (SELECT id FROM picked)
			RETURNING ` + transitionCols
		// On PostgreSQL the statement also locks the messages and reads the documents'
		// payload rows; SQLite reads the documents in a statement of its own.
		rows, err := t.query(ctx, s.lockingMessages(with, update, claimDocumentJoin, claimDocumentCols),
			target, n, target, s.tv(now), n, n, s.newTokenPrefix(), s.tv(now.Add(lease)), s.tv(now))
		docs := make(map[int64]persistence.Payload)
		ls := &lockingScan{t: t}
		trs, err := collect(rows, err, func(r rowScanner) (transition, error) {
			if s.dialect != DialectPostgres {
				return ls.scan(r)
			}
			var doc claimDocument
			tr, err := ls.scan(r, doc.dests()...)
			if err == nil && doc.key != nil {
				docs[tr.d.MessageID] = doc.payload(tr.d.MessageID)
			}
			return tr, err
		})
		if err != nil {
			return err
		}
		ls.presettle()
		slices.SortFunc(trs, func(a, b transition) int { return cmp.Compare(a.d.ID, b.d.ID) })
		for _, tr := range trs {
			t.changed(tr, fmt.Sprintf("attempt %d", tr.d.Attempts), "", time.Time{})
		}
		msgs, err := t.settle(ctx)
		if err != nil {
			return err
		}
		if s.dialect != DialectPostgres {
			if docs, err = t.documents(ctx, slices.Collect(maps.Keys(msgs))); err != nil {
				return err
			}
		}
		for _, tr := range trs {
			claims = append(claims, persistence.Claim{Delivery: tr.d, Message: msgs[tr.d.MessageID], Document: docs[tr.d.MessageID]})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries of %q: %w", target, err)
	}
	return claims, nil
}

// RenewLease extends the lease of a claimed delivery while token still holds the claim.
func (s *Store) RenewLease(ctx context.Context, deliveryID int64, token string, until time.Time) error {
	err := s.write(ctx, func(t *txn) error {
		if token == "" {
			return persistence.ErrLostClaim
		}
		res, err := t.exec(ctx, `UPDATE deliveries SET lease_until = ?
			WHERE id = ? AND claim_token = ? AND state = 'delivering'`, s.tv(until), deliveryID, token)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return persistence.ErrLostClaim
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("renew lease of delivery %d: %w", deliveryID, err)
	}
	return nil
}

// completionSet is the SET clause of an outcome and its arguments; completions with the
// same clause and arguments are applied by one statement.
func (s *Store) completionSet(c persistence.Completion, at time.Time) (string, []any) {
	// Every outcome replaces the external reference: only an attempt that awaits a
	// completion leaves one, so an earlier attempt's never outlives a new outcome.
	const release = `previous_state = state, claim_token = '', lease_until = NULL, external_ref = '', `
	reason := persistence.SanitizeReason(c.Reason)
	switch c.Kind {
	case persistence.OutcomeDelivered:
		return release + `state = 'delivered', last_error = '', error_class = ''`, nil
	case persistence.OutcomeAwaitingAck:
		return `previous_state = state, claim_token = '', lease_until = NULL, external_ref = ?, ` +
			`state = 'awaiting_ack', ack_deadline = ?, last_error = '', error_class = ''`, []any{c.ExternalRef, s.tv(c.AckDeadline)}
	case persistence.OutcomeRetry:
		next := c.NextAttemptAt
		if next.IsZero() || next.Before(at) {
			next = at
		}
		return release + `state = 'retrying', next_attempt_at = ?, next_wakeup_at = ?, last_error = ?, error_class = ?`,
			[]any{s.tv(next), s.tv(next), reason, c.ErrorClass}
	default: // OutcomeFailed
		return release + `state = 'failed', last_error = ?, error_class = ?`, []any{reason, c.ErrorClass}
	}
}

func checkCompletion(c persistence.Completion) error {
	switch c.Kind {
	case persistence.OutcomeDelivered, persistence.OutcomeRetry, persistence.OutcomeFailed:
	case persistence.OutcomeAwaitingAck:
		if c.AckDeadline.IsZero() {
			return fieldMsg("ack_deadline", "is required for %s", c.Kind)
		}
		if c.ExternalRef != "" {
			if err := persistence.CheckExternalRef(c.ExternalRef); err != nil {
				return fieldMsg("external_ref", "%v", err)
			}
		}
	default:
		return fieldMsg("kind", "invalid outcome %q: want delivered, awaiting_ack, retry or failed", c.Kind)
	}
	if c.ErrorClass != "" {
		if _, err := retry.ParseClass(c.ErrorClass); err != nil {
			return fieldErr("error_class", err)
		}
	}
	return nil
}

// rounds splits item indices, given in the order to apply them, into rounds in which no
// delivery appears twice, so a batch naming one delivery twice behaves as if applied one
// item at a time: the second finds the claim gone.
func rounds(order []int, id func(int) int64) [][]int {
	var out [][]int
	for len(order) > 0 {
		seen := make(map[int64]bool)
		var round, later []int
		for _, i := range order {
			if seen[id(i)] {
				later = append(later, i)
				continue
			}
			seen[id(i)] = true
			round = append(round, i)
		}
		out = append(out, round)
		order = later
	}
	return out
}

// updateClaimed applies one SET clause to the deliveries still claimed by the given
// tokens and still delivering, in one statement, and returns the transitions by id.
func (t *txn) updateClaimed(ctx context.Context, set string, setArgs []any, ids []int64, tokens []string) (map[int64]transition, error) {
	cond, condArgs := t.s.claimList(ids, tokens)
	args := append(append(slices.Clone(setArgs), t.s.tv(t.now)), condArgs...)
	rows, err := t.query(ctx, t.s.lockingMessages("", `UPDATE deliveries SET `+set+`, updated_at = ?
		WHERE state = 'delivering' AND `+cond+`
		RETURNING `+transitionCols, "", ""), args...)
	ls := &lockingScan{t: t}
	trs, err := collect(rows, err, func(r rowScanner) (transition, error) { return ls.scan(r) })
	if err != nil {
		return nil, err
	}
	ls.presettle()
	out := make(map[int64]transition, len(trs))
	for _, tr := range trs {
		out[tr.d.ID] = tr
	}
	return out, nil
}

// CompleteDeliveries records outcomes of claimed attempts in one transaction. Each applies
// only while its token holds the claim; the result has one entry per completion, nil or
// an error wrapping ErrLostClaim. Completions with the same outcome and values share one
// statement, so a batch of deliveries costs a few statements, not one each. An invalid
// completion refuses the whole batch.
func (s *Store) CompleteDeliveries(ctx context.Context, cs []persistence.Completion) ([]error, error) {
	for i, c := range cs {
		if err := checkCompletion(c); err != nil {
			return nil, fmt.Errorf("complete deliveries: completion %d (delivery %d): %w", i, c.DeliveryID, err)
		}
		for _, p := range c.Payloads {
			if err := checkPayload(p); err != nil {
				return nil, fmt.Errorf("complete deliveries: completion %d (delivery %d): payload: %w", i, c.DeliveryID, err)
			}
		}
		for _, r := range c.Downstream {
			if err := checkDownstream(r); err != nil {
				return nil, fmt.Errorf("complete deliveries: completion %d (delivery %d): downstream: %w", i, c.DeliveryID, err)
			}
		}
	}
	order := make([]int, 0, len(cs))
	for i := range cs {
		order = append(order, i)
	}
	// Rows are taken in id order, so two batches never wait for each other in a circle.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cs[a].DeliveryID, cs[b].DeliveryID) })

	var results []error
	err := s.write(ctx, func(t *txn) error {
		results = make([]error, len(cs))
		lost := func(i int) {
			results[i] = fmt.Errorf("complete delivery %d: %w", cs[i].DeliveryID, persistence.ErrLostClaim)
		}
		for _, round := range rounds(order, func(i int) int64 { return cs[i].DeliveryID }) {
			type group struct {
				set   string
				args  []any
				items []int
			}
			var groups []*group
			byKey := make(map[string]*group)
			at := make(map[int]time.Time, len(round))
			for _, i := range round {
				c := cs[i]
				if c.Token == "" {
					lost(i)
					continue
				}
				at[i] = t.now
				if !c.At.IsZero() {
					at[i] = utc(c.At)
				}
				set, args := s.completionSet(c, at[i])
				key := set + fmt.Sprint(args...)
				g := byKey[key]
				if g == nil {
					g = &group{set: set, args: args}
					byKey[key] = g
					groups = append(groups, g)
				}
				g.items = append(g.items, i)
			}
			for _, g := range groups {
				ids := make([]int64, len(g.items))
				tokens := make([]string, len(g.items))
				for k, i := range g.items {
					ids[k], tokens[k] = cs[i].DeliveryID, cs[i].Token
				}
				done, err := t.updateClaimed(ctx, g.set, g.args, ids, tokens)
				if err != nil {
					return fmt.Errorf("complete deliveries: %w", err)
				}
				for _, i := range g.items {
					tr, ok := done[cs[i].DeliveryID]
					if !ok {
						lost(i)
						continue
					}
					reason := cs[i].Reason
					if reason == "" {
						reason = string(cs[i].Kind)
					}
					t.changed(tr, reason, "", at[i])
					if cs[i].Pause != "" {
						if err := t.pauseRefused(ctx, tr.d, cs[i].Pause); err != nil {
							return fmt.Errorf("complete deliveries: %w", err)
						}
					}
				}
			}
		}
		t.addDownstream(cs)
		return t.addPayloads(ctx, cs)
	})
	if err != nil {
		return nil, fmt.Errorf("complete deliveries: %w", err)
	}
	return results, nil
}

// addPayloads records the stages the attempts stored, whether or not their claims held;
// a stage the message already has is left as it is.
func (t *txn) addPayloads(ctx context.Context, cs []persistence.Completion) error {
	for _, c := range cs {
		for _, p := range c.Payloads {
			if _, err := t.exec(ctx, `INSERT INTO payloads (message_id, stage, key, size, sha256, created_at)
					VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id, stage) DO NOTHING`,
				p.MessageID, p.Stage, p.Key, p.Size, p.SHA256, t.s.tv(t.now)); err != nil {
				return fmt.Errorf("add payload %s of message %d: %w", p.Stage, p.MessageID, err)
			}
		}
	}
	return nil
}

// ReleaseDeliveries hands interrupted claims back: queued and due at once, the attempt
// not counted. Claims no longer held are skipped; the error then wraps ErrLostClaim for
// each of them, and the others are released all the same.
func (s *Store) ReleaseDeliveries(ctx context.Context, rs []persistence.Release) error {
	order := make([]int, 0, len(rs))
	for i := range rs {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rs[a].DeliveryID, rs[b].DeliveryID) })
	var lost []error
	err := s.write(ctx, func(t *txn) error {
		lost = nil
		now := s.tv(t.now)
		for _, round := range rounds(order, func(i int) int64 { return rs[i].DeliveryID }) {
			var ids []int64
			var tokens []string
			for _, i := range round {
				if rs[i].Token == "" {
					lost = append(lost, fmt.Errorf("release delivery %d: %w", rs[i].DeliveryID, persistence.ErrLostClaim))
					continue
				}
				ids, tokens = append(ids, rs[i].DeliveryID), append(tokens, rs[i].Token)
			}
			if len(ids) == 0 {
				continue
			}
			done, err := t.updateClaimed(ctx, `previous_state = state, state = 'queued',
				claim_token = '', lease_until = NULL,
				attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,
				next_attempt_at = ?, next_wakeup_at = ?, wakeups = 0`, []any{now, now}, ids, tokens)
			if err != nil {
				return fmt.Errorf("release deliveries: %w", err)
			}
			for _, i := range round {
				tr, ok := done[rs[i].DeliveryID]
				if !ok {
					if rs[i].Token != "" {
						lost = append(lost, fmt.Errorf("release delivery %d: %w", rs[i].DeliveryID, persistence.ErrLostClaim))
					}
					continue
				}
				reason := rs[i].Reason
				if reason == "" {
					reason = "released"
				}
				t.changed(tr, reason, "", time.Time{})
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("release deliveries: %w", err)
	}
	return errors.Join(lost...)
}

// documents reads the document payload rows (stage unpacked) of the claimed messages in
// one statement, so the workers open the documents without a read each.
func (t *txn) documents(ctx context.Context, messageIDs []int64) (map[int64]persistence.Payload, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	cond, arg := t.s.idList("message_id", messageIDs)
	rows, err := t.query(ctx, `SELECT `+payloadCols+` FROM payloads WHERE stage = ? AND `+cond,
		string(persistence.PayloadUnpacked), arg)
	ps, err := collect(rows, err, scanPayload)
	if err != nil {
		return nil, fmt.Errorf("read the documents: %w", err)
	}
	out := make(map[int64]persistence.Payload, len(ps))
	for _, p := range ps {
		out[p.MessageID] = p
	}
	return out, nil
}

// The document's payload row joined to each claimed delivery on PostgreSQL.
const (
	claimDocumentJoin = `LEFT JOIN payloads p ON p.message_id = u.message_id AND p.stage = 'unpacked'`
	claimDocumentCols = `p.key, p.size, p.sha256, p.created_at`
)

// claimDocument scans claimDocumentCols, NULL when the message has no document.
type claimDocument struct {
	key, sha256 *string
	size        *int64
	createdAt   *time.Time
}

func (c *claimDocument) dests() []any {
	return []any{&c.key, &c.size, &c.sha256, nullTimeCol{&c.createdAt}}
}

func (c *claimDocument) payload(messageID int64) persistence.Payload {
	p := persistence.Payload{MessageID: messageID, Stage: persistence.PayloadUnpacked, Key: *c.key}
	if c.size != nil {
		p.Size = *c.size
	}
	if c.sha256 != nil {
		p.SHA256 = *c.sha256
	}
	if c.createdAt != nil {
		p.CreatedAt = *c.createdAt
	}
	return p
}
