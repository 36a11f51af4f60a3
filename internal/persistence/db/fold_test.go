package db_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// TestDeliveryStateIsTheFoldOfItsHistory runs a randomized workload through every path
// that changes a delivery — claims and their outcomes, releases, expired leases, wake-ups
// that stall, receipt deadlines, receipts, handoff reports, redelivery, resubmit and skip
// of ordered sessions, redispatch — and then holds, for every delivery, that its state
// column is the fold of its history (persistence.DeliveryStateFromHistory).
func TestDeliveryStateIsTheFoldOfItsHistory(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		for _, seed := range []uint64{1, 2} {
			t.Logf("seed %d", seed)
			runWorkload(t, s, rand.New(rand.NewPCG(seed, 0x3c6ef372)), 250)
		}
		checkFold(t, s)
	})
}

// runWorkload makes steps random changes. Operator actions may be refused by the state
// the delivery is in; that is part of the workload, so their errors are ignored.
func runWorkload(t *testing.T, s *db.Store, rng *rand.Rand, steps int) {
	ctx := context.Background()
	targets := []persistence.InstanceName{writer, poster, spare}
	now := time.Now().UTC()
	var msgs []int64
	var deliveries []int64
	pick := func(ids []int64) int64 { return ids[rng.IntN(len(ids))] }
	for range steps {
		now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
		op := rng.IntN(12)
		if len(msgs) == 0 {
			op = 0
		}
		switch op {
		case 0, 1: // dispatch one to three messages, some into an ordered session
			n := 1 + rng.IntN(3)
			first := must1[int64](t)(s.AllocateMessageIDs(ctx, n))
			batch := make([]persistence.NewMessage, n)
			for i := range batch {
				var tgs []persistence.InstanceName
				for _, tg := range targets {
					if rng.IntN(2) == 0 {
						tgs = append(tgs, tg)
					}
				}
				batch[i] = newMessage(first+int64(i), true, tgs...)
				if len(tgs) > 0 && tgs[0] == writer && rng.IntN(2) == 0 {
					batch[i].Sessions = map[persistence.InstanceName]persistence.DeliverySession{writer: {Key: "writer|s" + itoa(int64(rng.IntN(2)))}}
				}
			}
			for _, m := range must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch)) {
				msgs = append(msgs, m.ID)
				for _, d := range must1[[]persistence.Delivery](t)(s.ListDeliveries(ctx, m.ID)) {
					deliveries = append(deliveries, d.ID)
				}
			}
		case 2, 3, 4: // a worker claims and reports outcomes, or lets go, or goes silent
			claims := must1[[]persistence.Claim](t)(s.ClaimDeliveries(ctx, targets[rng.IntN(len(targets))], 1+rng.IntN(3), time.Minute, now))
			var cs []persistence.Completion
			var rs []persistence.Release
			for _, c := range claims {
				d := c.Delivery
				switch rng.IntN(6) {
				case 0, 1:
					cs = append(cs, persistence.Completion{DeliveryID: d.ID, Token: d.ClaimToken, Kind: persistence.OutcomeDelivered, At: now})
				case 2:
					cs = append(cs, persistence.Completion{DeliveryID: d.ID, Token: d.ClaimToken, Kind: persistence.OutcomeRetry,
						NextAttemptAt: now.Add(5 * time.Second), Reason: "503 from the target", ErrorClass: "http_5xx", At: now})
				case 3:
					cs = append(cs, persistence.Completion{DeliveryID: d.ID, Token: d.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "400 from the target", At: now})
				case 4:
					cs = append(cs, persistence.Completion{DeliveryID: d.ID, Token: d.ClaimToken, Kind: persistence.OutcomeAwaitingAck,
						AckDeadline: now.Add(30 * time.Second), ExternalRef: "job-" + itoa(d.ID), At: now})
				case 5:
					if rng.IntN(2) == 0 {
						rs = append(rs, persistence.Release{DeliveryID: d.ID, Token: d.ClaimToken, Reason: "stopping"})
					} // else the worker dies: its lease expires
				}
			}
			if len(cs) > 0 {
				complete(t, s, cs...)
			}
			if len(rs) > 0 {
				must(t, s.ReleaseDeliveries(ctx, rs))
			}
		case 5: // the sweep: expired leases, wake-ups that stall, receipt deadlines
			must1[[]persistence.Delivery](t)(s.ExpireLeases(ctx, now.Add(2*time.Minute), 500))
			_, _, err := s.WakeDue(ctx, now.Add(time.Hour), persistence.WakeupPolicy{MaxDispatches: 2, Backoff: func(int) time.Duration { return time.Second }}, 500)
			must(t, err)
			must1[[]persistence.Delivery](t)(s.ExpireAcks(ctx, now.Add(time.Minute), 500))
		case 6: // a receipt
			_, _ = s.SettleDelivery(ctx, pick(deliveries), rng.IntN(3) > 0, "receipt", "as2:test")
		case 7: // an in-house system's report
			_, _ = s.SettleHandoff(ctx, persistence.HandoffReport{DeliveryID: pick(deliveries), Completed: rng.IntN(2) == 0, Text: "rejected by the ERP", Actor: "token:erp"})
		case 8:
			mode := persistence.ResendSame
			if rng.IntN(2) == 0 {
				mode = persistence.ResendNew
			}
			_, _ = s.Redeliver(ctx, pick(deliveries), mode, "user:alice")
		case 9:
			_, _ = s.ActOnDeliveries(ctx, persistence.ActionResubmit, []int64{pick(deliveries)}, "user:alice")
		case 10:
			_, _ = s.ActOnDeliveries(ctx, persistence.ActionSkip, []int64{pick(deliveries)}, "user:alice")
		case 11:
			id := pick(msgs)
			due, err := s.Redispatch(ctx, id, targets[:1+rng.IntN(len(targets))], nil, nil, "user:alice")
			if err == nil {
				for _, d := range due {
					deliveries = append(deliveries, d.ID)
				}
			}
		}
	}
}

// checkFold compares every delivery's state with the fold of its history, and that the
// workload reached enough states to mean something.
func checkFold(t *testing.T, s *db.Store) {
	ctx := context.Background()
	msgs, total := must2(t)(s.ListMessages(ctx, persistence.MessageFilter{ListOptions: persistence.ListOptions{Limit: 10000}}))
	if total != len(msgs) {
		t.Fatalf("listed %d of %d messages", len(msgs), total)
	}
	reached := map[persistence.DeliveryState]bool{}
	checked := 0
	for _, m := range msgs {
		hist := must1[[]persistence.HistoryEntry](t)(s.ListHistory(ctx, m.ID))
		byDelivery := map[int64][]persistence.HistoryEntry{}
		for _, h := range hist {
			if h.DeliveryID != nil {
				byDelivery[*h.DeliveryID] = append(byDelivery[*h.DeliveryID], h)
				reached[persistence.DeliveryState(h.ToState)] = true
			}
		}
		for _, d := range must1[[]persistence.Delivery](t)(s.ListDeliveries(ctx, m.ID)) {
			checked++
			if got := persistence.DeliveryStateFromHistory(byDelivery[d.ID]); got != d.State {
				t.Errorf("delivery %d of message %d is %s, its history folds to %s: %+v", d.ID, m.ID, d.State, got, byDelivery[d.ID])
			}
		}
	}
	for _, st := range []persistence.DeliveryState{persistence.DeliveryDelivering, persistence.DeliveryDelivered, persistence.DeliveryRetrying,
		persistence.DeliveryFailed, persistence.DeliveryAwaitingAck, persistence.DeliveryStalled, persistence.DeliveryParked,
		persistence.DeliverySkipped, persistence.DeliveryQueued} {
		if !reached[st] {
			t.Errorf("the workload never reached %s; it proves too little", st)
		}
	}
	t.Logf("%d deliveries checked", checked)
}
