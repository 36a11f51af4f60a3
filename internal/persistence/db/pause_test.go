package db_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/retry"
)

const sender = persistence.InstanceName("sender")

// outbound inserts n messages from local to partner, dispatched to targets.
func outbound(t testing.TB, s *db.Store, partner persistence.PartyName, n int, targets ...persistence.InstanceName) []persistence.Message {
	t.Helper()
	ctx := context.Background()
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, n))
	batch := make([]persistence.NewMessage, n)
	for i := range batch {
		nm := newMessage(first+int64(i), true, targets...)
		nm.Message.From, nm.Message.To = local, partner
		batch[i] = nm
	}
	return must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
}

// deliveryTo is the delivery of message m to target.
func deliveryTo(t testing.TB, s *db.Store, m persistence.Message, target persistence.InstanceName) persistence.Delivery {
	t.Helper()
	for _, d := range deliveriesOf(t, s, m.ID) {
		if d.Target == target {
			return d
		}
	}
	t.Fatalf("message %d has no delivery to %s", m.ID, target)
	return persistence.Delivery{}
}

func pausesHeard(s *db.Store) func() []db.PauseEvent {
	var mu sync.Mutex
	var heard []db.PauseEvent
	s.OnPartnerPause(func(p db.PauseEvent) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, p)
	})
	return func() []db.PauseEvent {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(heard)
	}
}

// TestRefusalPausesPartner follows a refusal that pauses its partner: in the failure's
// transaction the partner's waiting deliveries through the partner protocol's target
// are paused (a file writer's copy and another partner's are not); later ones are
// paused at their claim, not attempted; the sweep leaves them alone; resume queues them
// with history naming the operator.
func TestRefusalPausesPartner(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: sender, Type: persistence.PluginAS2Sender, Enabled: true}))
		heard := pausesHeard(s)
		now := time.Now()

		first := outbound(t, s, acme, 1, sender, writer)[0]
		claims := claimAll(t, s, sender, now)
		if len(claims) != 1 {
			t.Fatalf("claimed %d, want 1", len(claims))
		}
		rest := outbound(t, s, acme, 3, sender, writer)
		other := outbound(t, s, beta, 1, sender)[0]
		const reason = "negative MDN: processed/error: authentication-failed"
		errs := complete(t, s, persistence.Completion{DeliveryID: claims[0].Delivery.ID, Token: claims[0].Delivery.ClaimToken,
			Kind: persistence.OutcomeFailed, Reason: reason, ErrorClass: string(retry.ClassRefused), Pause: reason})
		must(t, errs[0])

		wantState(t, s, deliveryTo(t, s, first, sender).ID, persistence.DeliveryFailed)
		for _, m := range rest {
			wantState(t, s, deliveryTo(t, s, m, sender).ID, persistence.DeliveryPaused)
			wantState(t, s, deliveryTo(t, s, m, writer).ID, persistence.DeliveryQueued)
			wantStatus(t, s, m.ID, persistence.StageDispatched, persistence.StatusHeld)
		}
		wantState(t, s, deliveryTo(t, s, other, sender).ID, persistence.DeliveryQueued)

		p := must1[persistence.PartnerPause](t)(s.GetPartnerPause(ctx, acme))
		if p.Reason != reason || p.Actor != "system" || p.DeliveryID != claims[0].Delivery.ID || p.MessageID != first.ID || p.Waiting != 3 {
			t.Fatalf("pause = %+v", p)
		}
		if h := heard(); len(h) != 1 || h[0].Partner != acme || h[0].Waiting != 3 || h[0].Resumed {
			t.Fatalf("heard pauses %+v, want acme's with 3 waiting", h)
		}
		_, err := s.GetPartnerPause(ctx, beta)
		wantErr(t, err, persistence.ErrNotFound)
		last := auditEvents(t, s)
		if e := last[len(last)-1]; e.Action != "pause" || e.RecordID != string(acme) || e.Actor != audit.SystemActor {
			t.Fatalf("last audit event %+v, want the system's pause of acme", e)
		}

		// A message dispatched while the partner is paused is paused by the claim; the
		// other partner's delivery is claimed.
		later := outbound(t, s, acme, 1, sender)[0]
		claims = claimAll(t, s, sender, now)
		if len(claims) != 1 || claims[0].Delivery.MessageID != other.ID {
			t.Fatalf("claimed %+v, want only the delivery to beta", claims)
		}
		wantState(t, s, deliveryTo(t, s, later, sender).ID, persistence.DeliveryPaused)
		if h := history(t, s, later.ID); !strings.Contains(h[len(h)-1].Reason+h[len(h)-2].Reason, "partner acme is paused") {
			t.Fatalf("history of the later message: %+v", h)
		}

		// No wake-ups, no stall, however often the sweep runs.
		for range 10 {
			_, _, err := s.WakeDue(ctx, now.Add(time.Hour), persistence.WakeupPolicy{MaxDispatches: 1}, 100)
			must(t, err)
		}
		wantState(t, s, deliveryTo(t, s, later, sender).ID, persistence.DeliveryPaused)

		_, err = s.PausePartner(ctx, acme, "by hand", "user:alice")
		wantErr(t, err, persistence.ErrConflict)

		resumed := must1[[]persistence.Delivery](t)(s.ResumePartner(ctx, acme, "user:alice"))
		if len(resumed) != 4 {
			t.Fatalf("resumed %d deliveries, want 4", len(resumed))
		}
		for _, d := range resumed {
			if d.State != persistence.DeliveryQueued || d.Target != sender {
				t.Fatalf("resumed %+v", d)
			}
		}
		h := history(t, s, later.ID)
		if e := h[len(h)-1]; e.Kind != persistence.HistoryStatusChanged && !strings.Contains(e.Reason, "resumed by user:alice") {
			t.Fatalf("last history line %+v", e)
		}
		found := false
		for _, e := range h {
			found = found || (e.ToState == "queued" && e.FromState == "paused" && e.Actor == "user:alice" && strings.Contains(e.Reason, "resumed"))
		}
		if !found {
			t.Fatalf("no resume line naming the operator in %v", kinds(h))
		}
		_, err = s.GetPartnerPause(ctx, acme)
		wantErr(t, err, persistence.ErrNotFound)
		if h := heard(); len(h) != 2 || h[1].Partner != acme || !h[1].Resumed {
			t.Fatalf("heard pauses %+v, want acme's pause and resumption", h)
		}
		_, err = s.ResumePartner(ctx, acme, "user:alice")
		wantErr(t, err, persistence.ErrConflict)
		if claims = claimAll(t, s, sender, now.Add(time.Second)); len(claims) != 4 {
			t.Fatalf("claimed %d after resume, want 4", len(claims))
		}
		checkInvariants(t, s)
	})
}

// TestPausePartnerByHand pauses and resumes a partner as an operator, with audit events,
// and refuses what is wrong.
func TestPausePartnerByHand(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: sender, Type: persistence.PluginAS2Sender, Enabled: true}))
		msgs := outbound(t, s, beta, 2, sender)

		for _, tt := range []struct {
			name    string
			partner persistence.PartyName
			reason  string
			check   func(error)
		}{
			{"no reason", beta, "", func(err error) { wantField(t, err, "reason") }},
			{"long reason", beta, strings.Repeat("x", persistence.MaxPauseReason+1), func(err error) { wantField(t, err, "reason") }},
			{"unknown partner", "nobody", "why", func(err error) { wantErr(t, err, persistence.ErrNotFound) }},
			{"an organization", local, "why", func(err error) { wantErr(t, err, persistence.ErrNotFound) }},
		} {
			_, err := s.PausePartner(ctx, tt.partner, tt.reason, "user:alice")
			tt.check(err)
		}
		p := must1[persistence.PartnerPause](t)(s.PausePartner(ctx, beta, "certificate rollover on their side", "user:alice"))
		if p.Actor != "user:alice" || p.Waiting != 2 || p.DeliveryID != 0 {
			t.Fatalf("pause %+v", p)
		}
		for _, m := range msgs {
			wantState(t, s, deliveryTo(t, s, m, sender).ID, persistence.DeliveryPaused)
		}
		list := must1[[]persistence.PartnerPause](t)(s.ListPartnerPauses(ctx))
		if len(list) != 1 || list[0].Partner != beta || list[0].Waiting != 2 {
			t.Fatalf("pauses %+v", list)
		}
		// The partner's activity carries the pause, and its held messages are problems.
		a := must1[persistence.PartnerActivity](t)(s.PartnerActivity(ctx, beta, time.Now()))
		if a.Pause == nil || a.Pause.Waiting != 2 || a.Pause.Reason != "certificate rollover on their side" || a.Problems != 2 {
			t.Fatalf("activity %+v (pause %+v), want the pause with 2 waiting and 2 problems", a, a.Pause)
		}
		must1[[]persistence.Delivery](t)(s.ResumePartner(ctx, beta, "user:bob"))
		if a := must1[persistence.PartnerActivity](t)(s.PartnerActivity(ctx, beta, time.Now())); a.Pause != nil {
			t.Fatalf("activity after resume still paused: %+v", a.Pause)
		}
		var actions []string
		for _, e := range auditEvents(t, s) {
			if e.RecordID == string(beta) && e.Action != "create" {
				actions = append(actions, fmt.Sprintf("%s by %s", e.Action, e.Actor))
			}
		}
		if want := []string{"pause by user:alice", "resume by user:bob"}; !slices.Equal(actions, want) {
			t.Fatalf("audit %v, want %v", actions, want)
		}
		_, err := s.ResumePartner(ctx, "nobody", "user:bob")
		wantErr(t, err, persistence.ErrNotFound)
		checkInvariants(t, s)
	})
}

// TestRefusedReceiptPausesPartner: an asynchronous receipt's refusal pauses the partner
// in the settlement's transaction; an accepted receipt does not.
func TestRefusedReceiptPausesPartner(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: sender, Type: persistence.PluginAS2Sender, Enabled: true}))
		now := time.Now()
		sent := outbound(t, s, acme, 1, sender)[0]
		c := claimAll(t, s, sender, now)[0]
		must(t, complete(t, s, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken,
			Kind: persistence.OutcomeAwaitingAck, AckDeadline: now.Add(time.Hour)})[0])
		waiting := outbound(t, s, acme, 1, sender)[0]

		d := must1[persistence.Delivery](t)(s.RefuseDeliveryPausing(ctx, c.Delivery.ID, "negative MDN: decryption-failed", "decryption-failed", "as2:mdn"))
		if d.State != persistence.DeliveryFailed {
			t.Fatalf("refused delivery is %s", d.State)
		}
		wantState(t, s, deliveryTo(t, s, waiting, sender).ID, persistence.DeliveryPaused)
		p := must1[persistence.PartnerPause](t)(s.GetPartnerPause(ctx, acme))
		if p.MessageID != sent.ID || p.Reason != "decryption-failed" {
			t.Fatalf("pause %+v", p)
		}
		// A receipt for a delivery already failed changes nothing and pauses no one.
		must1[[]persistence.Delivery](t)(s.ResumePartner(ctx, acme, "user:alice"))
		must1[persistence.Delivery](t)(s.RefuseDeliveryPausing(ctx, c.Delivery.ID, "again", "again", "as2:mdn"))
		_, err := s.GetPartnerPause(ctx, acme)
		wantErr(t, err, persistence.ErrNotFound)
		checkInvariants(t, s)
	})
}

// TestResumeIntoBlockedSession: the refusal that pauses a partner also blocks the ordered
// session it failed in; on resume the session's waiting deliveries go behind the blocking
// one, parked, and are released when it is skipped.
func TestResumeIntoBlockedSession(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: sender, Type: persistence.PluginAS2Sender, Enabled: true}))
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 3))
		var batch []persistence.NewMessage
		for i := range 3 {
			nm := newMessage(first+int64(i), true, sender)
			nm.Message.From, nm.Message.To = local, acme
			nm.Sessions = map[persistence.InstanceName]persistence.DeliverySession{sender: {Key: "sender|local→acme"}}
			batch = append(batch, nm)
		}
		msgs := must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
		c := claimAll(t, s, sender, time.Now())
		if len(c) != 1 {
			t.Fatalf("claimed %d of the session, want its head", len(c))
		}
		must(t, complete(t, s, persistence.Completion{DeliveryID: c[0].Delivery.ID, Token: c[0].Delivery.ClaimToken,
			Kind: persistence.OutcomeFailed, Reason: "refused", Pause: "authentication-failed"})[0])
		for _, m := range msgs[1:] {
			wantState(t, s, deliveryTo(t, s, m, sender).ID, persistence.DeliveryPaused)
		}
		due := must1[[]persistence.Delivery](t)(s.ResumePartner(ctx, acme, "user:alice"))
		if len(due) != 0 {
			t.Fatalf("resume made %d due behind a blocked session", len(due))
		}
		for _, m := range msgs[1:] {
			wantState(t, s, deliveryTo(t, s, m, sender).ID, persistence.DeliveryParked)
		}
		must1[[]persistence.DeliveryActionResult](t)(s.SkipDeliveries(ctx, []int64{c[0].Delivery.ID}, "user:alice"))
		for _, m := range msgs[1:] {
			wantState(t, s, deliveryTo(t, s, m, sender).ID, persistence.DeliveryQueued)
		}
		checkInvariants(t, s)
	})
}
