package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// Workers claim and complete with random failures and retries while a source dispatches
// more and an operator resubmits or skips the blocking deliveries: no two claims of one
// session are ever held at once, and each session's deliveries reach delivered strictly
// in dispatch order.
func TestSessionOrderUnderConcurrency(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		const sessions, perBatch, batches, workers = 8, 8, 25, 4
		keyOf := func(i int) string { return fmt.Sprintf("writer|c%d", i) }

		var mu sync.Mutex
		held := map[string]int64{}        // session → the delivery a worker holds
		delivered := map[string][]int64{} // session → delivered ids in commit order
		var violations []string
		dispatched := 0

		dispatch := func(rng *rand.Rand) error {
			first, err := s.AllocateMessageIDs(ctx, perBatch)
			if err != nil {
				return err
			}
			batch := make([]persistence.NewMessage, perBatch)
			for i := range batch {
				batch[i] = newMessage(first+int64(i), true, writer)
				batch[i].Sessions = map[persistence.InstanceName]persistence.DeliverySession{writer: {Key: keyOf(rng.IntN(sessions))}}
			}
			_, err = s.InsertMessages(ctx, batch)
			return err
		}

		var wg sync.WaitGroup
		errs := make(chan error, workers+2)
		stop := make(chan struct{})
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for {
					select {
					case <-stop:
						return
					default:
					}
					cs, err := s.ClaimDeliveries(ctx, writer, 1+rng.IntN(3), time.Hour, time.Now())
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for _, c := range cs {
						k := c.Delivery.SessionKey
						if other, ok := held[k]; ok {
							violations = append(violations, fmt.Sprintf("session %s: %d claimed while %d is held", k, c.Delivery.ID, other))
						}
						held[k] = c.Delivery.ID
					}
					mu.Unlock()
					var comps []persistence.Completion
					for _, c := range cs {
						kind := persistence.OutcomeDelivered
						switch n := rng.IntN(10); {
						case n == 0:
							kind = persistence.OutcomeFailed
						case n == 1:
							kind = persistence.OutcomeRetry
						}
						comps = append(comps, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken,
							Kind: kind, NextAttemptAt: now, Reason: "random"})
					}
					// Let go before the commit: the database alone keeps the next one of
					// the session back until this outcome is committed.
					mu.Lock()
					for _, c := range cs {
						delete(held, c.Delivery.SessionKey)
					}
					mu.Unlock()
					res, err := s.CompleteDeliveries(ctx, comps)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for i, c := range cs {
						if res[i] == nil && comps[i].Kind == persistence.OutcomeDelivered {
							k := c.Delivery.SessionKey
							delivered[k] = append(delivered[k], c.Delivery.ID)
						}
					}
					mu.Unlock()
				}
			}()
		}
		// The source dispatches while the workers run.
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(99, 1))
			for range batches {
				if err := dispatch(rng); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				dispatched += perBatch
				mu.Unlock()
			}
		}()
		// The operator resubmits or skips what blocks, until everything is settled.
		rng := rand.New(rand.NewPCG(5, 5))
		deadline := time.Now().Add(60 * time.Second)
		for {
			select {
			case err := <-errs:
				close(stop)
				wg.Wait()
				t.Fatal(err)
			default:
			}
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				open := must1[int64](t)(db.QueryInt(ctx, s, `SELECT COUNT(*) FROM deliveries WHERE state NOT IN ('delivered', 'skipped')`))
				t.Fatalf("deliveries did not settle in time: %d open", open)
			}
			blocked, _, err := s.ListBlockedSessions(ctx, persistence.SessionFilter{})
			must(t, err)
			for _, b := range blocked {
				act := s.ResubmitDeliveries
				if rng.IntN(3) == 0 {
					act = s.SkipDeliveries
				}
				res, err := act(ctx, []int64{b.BlockedBy}, "operator")
				must(t, err)
				if res[0].Err != nil && !errors.Is(res[0].Err, persistence.ErrConflict) {
					t.Fatal(res[0].Err)
				}
			}
			open := must1[int64](t)(db.QueryInt(ctx, s, `SELECT COUNT(*) FROM deliveries WHERE state NOT IN ('delivered', 'skipped')`))
			mu.Lock()
			done := dispatched == batches*perBatch && open == 0
			mu.Unlock()
			if done {
				break
			}
		}
		close(stop)
		wg.Wait()
		if len(violations) > 0 {
			t.Fatalf("%d violations, first: %s", len(violations), violations[0])
		}
		// The order of the commits is the order of the history lines they wrote: a worker
		// may note its outcome after another worker has already claimed and completed the
		// next delivery of the session, so the notes above only count.
		inOrder := map[string][]int64{}
		rows, err := db.BunDB(s).DB.QueryContext(ctx, db.Rebind(s, `SELECT d.session_key, h.delivery_id
			FROM message_history h JOIN deliveries d ON d.id = h.delivery_id
			WHERE h.kind = 'delivery_changed' AND h.to_state = 'delivered' ORDER BY h.id`))
		must(t, err)
		for rows.Next() {
			var k string
			var id int64
			must(t, rows.Scan(&k, &id))
			inOrder[k] = append(inOrder[k], id)
		}
		must(t, rows.Err())
		rows.Close()
		total := 0
		for k, ids := range delivered {
			slices.Sort(ids)
			if !slices.Equal(ids, inOrder[k]) {
				t.Fatalf("session %s: delivered in commit order %v, the workers saw %v delivered", k, inOrder[k], ids)
			}
			if len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("session %s delivered a delivery twice: %v", k, ids)
			}
			total += len(ids)
		}
		skipped := int(must1[int64](t)(db.QueryInt(ctx, s, `SELECT COUNT(*) FROM deliveries WHERE state = 'skipped'`)))
		if total+skipped != batches*perBatch {
			t.Fatalf("%d delivered and %d skipped of %d", total, skipped, batches*perBatch)
		}
		t.Logf("%d delivered in order, %d skipped", total, skipped)
		checkInvariants(t, s)
	})
}
