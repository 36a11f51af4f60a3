// Package erasure removes the content of messages an operator asks to forget: one
// message, or every message of a party in a time range. The store clears the rows and
// marks the messages erased in one transaction per batch; this package then deletes the
// payload blobs and their records, and finishes, at start, the blobs of erased messages
// a crash left behind.
package erasure

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"wharf/internal/persistence"
)

// Store is what an erasure needs of the database (db.Store).
type Store interface {
	CountErasable(ctx context.Context, f persistence.ErasureFilter) (persistence.ErasureCount, error)
	ErasableIDs(ctx context.Context, f persistence.ErasureFilter, afterID int64, limit int) ([]int64, error)
	EraseMessage(ctx context.Context, id int64, actor string) error
	EraseMessages(ctx context.Context, ids []int64, actor, scope string) (persistence.ErasureResult, error)
	ErasedPayloads(ctx context.Context, limit int) ([]persistence.Payload, error)
	PayloadRecords
	ReclaimFreedSpace(ctx context.Context) error
}

// Service erases messages' content.
type Service struct {
	store    Store
	blobs    Blobs
	log      *slog.Logger
	interval time.Duration // PurgeInterval but in tests
	loop     loop
}

// New builds the service; a nil log discards.
func New(store Store, blobs Blobs, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, blobs: blobs, log: log, interval: PurgeInterval}
}

// Count says what erasing the filter's messages would come to, for a confirmation.
func (s *Service) Count(ctx context.Context, f persistence.ErasureFilter) (persistence.ErasureCount, error) {
	return s.store.CountErasable(ctx, f)
}

// EraseMessage erases one message (see db.Store.EraseMessage for its refusals) and
// deletes its payloads.
func (s *Service) EraseMessage(ctx context.Context, id int64, actor string) (persistence.ErasureResult, error) {
	if err := s.store.EraseMessage(ctx, id, actor); err != nil {
		return persistence.ErasureResult{}, err
	}
	n, err := s.Purge(ctx)
	return persistence.ErasureResult{Erased: 1, PayloadsRemoved: n}, err
}

// Erase erases every erasable message of the filter in batches of
// persistence.MaxErasureBatch, each its own transaction, deleting the payloads of each
// batch after its commit. Messages with deliveries under way are left and counted.
func (s *Service) Erase(ctx context.Context, f persistence.ErasureFilter, actor string) (persistence.ErasureResult, error) {
	if err := f.Check(); err != nil {
		return persistence.ErasureResult{}, err
	}
	before, err := s.store.CountErasable(ctx, f)
	if err != nil {
		return persistence.ErasureResult{}, err
	}
	scope := fmt.Sprintf("%s from %s to %s", f.Party, f.From.UTC().Format("2006-01-02T15:04:05Z"), f.To.UTC().Format("2006-01-02T15:04:05Z"))
	var out persistence.ErasureResult
	var after int64
	for {
		ids, err := s.store.ErasableIDs(ctx, f, after, persistence.MaxErasureBatch)
		if err != nil {
			return out, err
		}
		if len(ids) == 0 {
			break
		}
		after = ids[len(ids)-1]
		res, err := s.store.EraseMessages(ctx, ids, actor, scope)
		if err != nil {
			return out, err
		}
		out.Erased += res.Erased
		n, err := s.Purge(ctx)
		out.PayloadsRemoved += n
		if err != nil {
			return out, err
		}
		if len(ids) < persistence.MaxErasureBatch {
			break
		}
	}
	// What was left is what could not be erased when the erasure began, or became so
	// while it ran.
	out.AlreadyErased = before.AlreadyErased
	out.InFlight = before.InFlight + before.Erasable - out.Erased
	s.log.Info("messages erased", "party", f.Party, "erased", out.Erased, "in_flight", out.InFlight, "payloads", out.PayloadsRemoved)
	return out, nil
}

// Purge deletes the payloads of erased messages still recorded (an erasure's, or one a
// crash interrupted), batch by batch, then has the database reclaim the freed space; it
// returns how many blobs it deleted.
func (s *Service) Purge(ctx context.Context) (int, error) {
	total := 0
	for {
		ps, err := s.store.ErasedPayloads(ctx, persistence.MaxErasureBatch)
		if err != nil {
			return total, err
		}
		if len(ps) == 0 {
			break
		}
		if err := RemovePayloads(ctx, s.blobs, s.store, ps); err != nil {
			return total, err
		}
		total += len(ps)
	}
	if err := s.store.ReclaimFreedSpace(ctx); err != nil {
		// The content is out of every row; only the database's own files may still
		// hold old page images until its next checkpoint.
		s.log.Warn("erasure: reclaim freed space", "err", err)
	}
	return total, nil
}
