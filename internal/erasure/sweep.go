package erasure

import (
	"context"
	"errors"
	"sync"
	"time"
)

// PurgeInterval is how often a running service looks for payloads of erased messages:
// blobs a crash left, or a receipt stored for a message after its erasure.
const PurgeInterval = time.Minute

// loop is the background purge of a started service.
type loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start purges once (finishing the erasures a crash interrupted), then again every
// PurgeInterval until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.loop.mu.Lock()
	defer s.loop.mu.Unlock()
	if s.loop.done != nil {
		return errors.New("erasure: already started")
	}
	s.purgeLogged(ctx)
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.loop.cancel, s.loop.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		tick := time.NewTicker(s.interval)
		defer tick.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
				s.purgeLogged(lctx)
			}
		}
	}(s.loop.done)
	return nil
}

// Stop ends the background purge and waits for a purge under way, or for ctx.
func (s *Service) Stop(ctx context.Context) error {
	s.loop.mu.Lock()
	cancel, done := s.loop.cancel, s.loop.done
	s.loop.cancel, s.loop.done = nil, nil
	s.loop.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// purgeLogged purges and logs what it did; a failure waits for the next round.
func (s *Service) purgeLogged(ctx context.Context) {
	n, err := s.Purge(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Error("erasure: delete payloads of erased messages", "err", err)
	case n > 0:
		s.log.Info("erasure: payloads of erased messages deleted", "payloads", n)
	}
}
