package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"wharf/internal/persistence/db"
)

// sweepLocker takes the sweep's advisory lock (db.Store).
type sweepLocker interface {
	TryLock(ctx context.Context, key int32) (*db.SessionLock, error)
}

// sweepLock makes this process the active sweeper while it holds the PostgreSQL advisory
// lock, and a standby otherwise. The sweeper asks Active before every pass, so a standby
// tries the lock once per sweep interval and takes over within one interval of the
// holder's death (its session, and with it the lock, ends with its connection).
type sweepLock struct {
	store sweepLocker
	log   *slog.Logger

	mu      sync.Mutex
	held    *db.SessionLock
	standby bool // the last attempt found the lock taken; logged once per change
}

// lockCheckTimeout bounds the check that the held lock's connection still answers.
const lockCheckTimeout = 5 * time.Second

// Active reports whether this process holds the sweep lock, taking it when it is free.
func (l *sweepLock) Active(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held != nil {
		cctx, cancel := context.WithTimeout(ctx, lockCheckTimeout)
		err := l.held.Check(cctx)
		cancel()
		if err == nil {
			return true
		}
		l.log.Warn("lost the sweep lock; standing by", "err", err)
		l.held.Release(ctx)
		l.held = nil
	}
	lk, err := l.store.TryLock(ctx, db.SweepLockKey)
	if err != nil {
		l.log.Warn("take the sweep lock", "err", err)
		return false
	}
	if lk == nil {
		if !l.standby {
			l.log.Info("another process is the active sweeper; standing by")
			l.standby = true
		}
		return false
	}
	l.held, l.standby = lk, false
	l.log.Info("this process is the active sweeper")
	return true
}

// Release gives the lock up at shutdown, so a standby takes over at its next attempt.
func (l *sweepLock) Release(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held != nil {
		l.held.Release(ctx)
		l.held = nil
	}
}
