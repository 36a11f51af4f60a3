package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// After random operations by concurrent actors (sources, workers, the sweep, operators),
// every message's stored status and stage equal the derivation from its deliveries, and
// its status history ends at its status.
func TestStatusInvariant(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		const actors, steps = 4, 60
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		targets := []persistence.InstanceName{writer, poster, spare}
		start := time.Now()

		var wg sync.WaitGroup
		errs := make(chan error, actors)
		for a := range actors {
			rng := rand.New(rand.NewPCG(seed, uint64(a)))
			wg.Go(func() {
				if err := randomActor(s, rng, targets, start, steps); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		checkInvariants(t, s)
		msgs, _ := must2(t)(s.ListMessages(context.Background(), persistence.MessageFilter{ListOptions: persistence.ListOptions{Limit: 1000}}))
		byStatus := make(map[persistence.MessageStatus]int)
		for _, m := range msgs {
			byStatus[m.Status]++
		}
		t.Logf("%d messages by status: %v", len(msgs), byStatus)
	})
}

func randomActor(s *db.Store, rng *rand.Rand, targets []persistence.InstanceName, start time.Time, steps int) error {
	ctx := context.Background()
	now := start
	var held []persistence.Delivery // claims this actor holds
	var known []int64               // messages this actor inserted
	pick := func() persistence.InstanceName { return targets[rng.IntN(len(targets))] }

	for range steps {
		now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
		switch op := rng.IntN(10); op {
		case 0, 1: // a source inserts a batch
			n := 1 + rng.IntN(5)
			first, err := s.AllocateMessageIDs(ctx, n)
			if err != nil {
				return err
			}
			var batch []persistence.NewMessage
			for i := range n {
				var tg []persistence.InstanceName
				for range rng.IntN(4) {
					tg = append(tg, pick())
				}
				nm := newMessage(first+int64(i), rng.IntN(6) != 0, tg...)
				if !nm.Dispatch {
					nm.Targets = nil
				}
				// Half the deliveries join one of a few ordered sessions of their target.
				for _, tg := range nm.Targets {
					if rng.IntN(2) == 0 {
						if nm.Sessions == nil {
							nm.Sessions = map[persistence.InstanceName]persistence.DeliverySession{}
						}
						nm.Sessions[tg] = persistence.DeliverySession{Key: fmt.Sprintf("%s|s%d", tg, rng.IntN(3))}
					}
				}
				if len(nm.Targets) == 0 && rng.IntN(3) == 0 {
					nm.Message.Refusal = persistence.RefusalRefused
				}
				batch = append(batch, nm)
				known = append(known, first+int64(i))
			}
			if _, err := s.InsertMessages(ctx, batch); err != nil {
				return err
			}
		case 2, 3: // a worker claims
			cs, err := s.ClaimDeliveries(ctx, pick(), 1+rng.IntN(4), time.Duration(30+rng.IntN(60))*time.Second, now)
			if err != nil {
				return err
			}
			for _, c := range cs {
				held = append(held, c.Delivery)
			}
		case 4, 5: // a worker completes some of its claims
			var cs []persistence.Completion
			for len(held) > 0 && rng.IntN(3) != 0 {
				d := held[0]
				held = held[1:]
				kinds := []persistence.OutcomeKind{persistence.OutcomeDelivered, persistence.OutcomeAwaitingAck, persistence.OutcomeRetry, persistence.OutcomeFailed}
				cs = append(cs, persistence.Completion{DeliveryID: d.ID, Token: d.ClaimToken, Kind: kinds[rng.IntN(len(kinds))],
					NextAttemptAt: now.Add(time.Duration(rng.IntN(120)) * time.Second), AckDeadline: now.Add(time.Duration(rng.IntN(300)) * time.Second), Reason: "random"})
			}
			res, err := s.CompleteDeliveries(ctx, cs)
			if err != nil {
				return err
			}
			for _, e := range res {
				if e != nil && !errors.Is(e, persistence.ErrLostClaim) {
					return e
				}
			}
		case 6: // a worker renews or releases
			if len(held) == 0 {
				continue
			}
			d := held[0]
			if rng.IntN(2) == 0 {
				if err := s.RenewLease(ctx, d.ID, d.ClaimToken, now.Add(time.Minute)); err != nil && !errors.Is(err, persistence.ErrLostClaim) {
					return err
				}
				continue
			}
			held = held[1:]
			if err := s.ReleaseDeliveries(ctx, []persistence.Release{{DeliveryID: d.ID, Token: d.ClaimToken, Reason: "stop"}}); err != nil && !errors.Is(err, persistence.ErrLostClaim) {
				return err
			}
		case 7: // the sweep
			if _, err := s.ExpireLeases(ctx, now, 50); err != nil {
				return err
			}
			if _, _, err := s.WakeDue(ctx, now, persistence.WakeupPolicy{MaxDispatches: 2, Backoff: func(int) time.Duration { return 20 * time.Second }}, 50); err != nil {
				return err
			}
			if _, err := s.ExpireAcks(ctx, now, 50); err != nil {
				return err
			}
		case 8: // an operator redispatches one of the messages
			if len(known) == 0 {
				continue
			}
			_, err := s.Redispatch(ctx, known[rng.IntN(len(known))], []persistence.InstanceName{pick()}, nil, nil, "operator")
			if err != nil && !errors.Is(err, persistence.ErrConflict) {
				return err
			}
		case 9: // an operator redelivers a delivery of one of the messages
			if len(known) == 0 {
				continue
			}
			ds, err := s.ListDeliveries(ctx, known[rng.IntN(len(known))])
			if err != nil {
				return err
			}
			if len(ds) == 0 {
				continue
			}
			id := ds[rng.IntN(len(ds))].ID
			var err2 error
			switch rng.IntN(3) {
			case 0:
				_, err2 = s.Redeliver(ctx, id, persistence.ResendSame, "operator")
			case 1:
				_, err2 = s.ResubmitDeliveries(ctx, []int64{id}, "operator")
			default:
				_, err2 = s.SkipDeliveries(ctx, []int64{id}, "operator")
			}
			if err2 != nil && !errors.Is(err2, persistence.ErrConflict) {
				return err2
			}
		}
	}
	return nil
}
