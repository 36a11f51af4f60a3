package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// groupCommit lets write transactions that queue for SQLite's single writer connection
// share one commit. With synchronous=FULL every commit is a WAL write and an fsync, and
// concurrent writers (delivery attempts, receivers, claims) otherwise wait in line for
// one fsync each. The first writer to arrive leads: it takes every request queued so far,
// runs each inside a savepoint of one transaction and commits once; each request still
// succeeds or fails on its own, and nobody learns of success before the commit is
// durable. Whoever queued meanwhile leads the next group.
type groupCommit struct {
	mu    sync.Mutex
	queue []*writeReq
	busy  bool // a leader is running a group

	grouped atomic.Int64 // groups of more than one request committed, for tests
}

type writeReq struct {
	ctx  context.Context
	fn   func(t *txn) error
	err  error
	done chan struct{} // closed when err is final, or when the request is to lead
	lead bool
	// panicked holds what fn panicked with, raised again in the requester's goroutine.
	panicked any
}

// maxGroup bounds a group, so one commit does not wait on an unbounded tail of work.
const maxGroup = 64

func (g *groupCommit) write(s *Store, ctx context.Context, fn func(t *txn) error) error {
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, r)
	if g.busy {
		g.mu.Unlock()
		<-r.done
		if !r.lead {
			return r.result()
		}
		g.mu.Lock()
	}
	g.busy = true
	n := min(len(g.queue), maxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	if len(g.queue) == 0 {
		g.queue = nil
	}
	g.mu.Unlock()

	s.runGroup(batch)
	for _, q := range batch {
		if q != r {
			close(q.done)
		}
	}

	g.mu.Lock()
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.lead = true
		close(next.done)
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	return r.result()
}

func (r *writeReq) result() error {
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.err
}

// alone runs the request in a transaction of its own.
func (s *Store) alone(r *writeReq) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
		}
	}()
	r.panicked = nil
	r.err = s.writeOne(r.ctx, r.fn)
}

// runGroup runs the requests and sets each one's error. A lone request runs as before;
// a group runs in one transaction, each request in a savepoint that is rolled back when
// it fails. When the group cannot commit, each request that had succeeded runs again in a
// transaction of its own (write's fn may run more than once).
func (s *Store) runGroup(batch []*writeReq) {
	if len(batch) == 1 {
		s.alone(batch[0])
		return
	}
	ok, err := s.tryGroup(batch)
	if err == nil {
		s.group.grouped.Add(1)
		return
	}
	s.log.Debug("group commit failed; running its transactions one by one", "count", len(batch), "err", err)
	for i, r := range batch {
		if ok[i] {
			s.alone(r)
		}
	}
}

// tryGroup runs the batch in one transaction. It sets the error of each request that
// failed on its own; ok marks the others, which are committed only when err is nil.
func (s *Store) tryGroup(batch []*writeReq) (ok []bool, err error) {
	ok = make([]bool, len(batch))
	// The group's transaction outlives any one request's context; each request's
	// statements still run under its own.
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		for i := range ok {
			ok[i] = true
		}
		return ok, fmt.Errorf("begin transaction: %w", err)
	}
	s.counts.transactions.Add(1)
	var (
		stmts      map[string]*sql.Stmt
		unprepared []string
	)
	defer func() {
		if len(unprepared) > 0 {
			s.compileOnPool(ctx, s.w, unprepared)
		}
	}()
	txns := make([]*txn, len(batch))
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = fmt.Errorf("begin transaction: %w", err)
			continue
		}
		if _, err := tx.Tx.ExecContext(ctx, "SAVEPOINT grp"); err != nil {
			return s.groupFailed(ok, i, err)
		}
		t := &txn{s: s, db: s.w, tx: tx.Tx, now: utc(s.now()), actor: systemActor, stmts: stmts}
		txns[i] = t
		ferr := runFn(r, t)
		stmts = t.stmts
		unprepared = append(unprepared, t.unprepared...)
		if ferr != nil {
			r.err = ferr
			if _, err := tx.Tx.ExecContext(ctx, "ROLLBACK TO grp"); err != nil {
				return s.groupFailed(ok, i, err)
			}
		}
		if _, err := tx.Tx.ExecContext(ctx, "RELEASE grp"); err != nil {
			return s.groupFailed(ok, i, err)
		}
		ok[i] = ferr == nil
	}
	if err := tx.Commit(); err != nil {
		committed = true // a failed commit has ended the transaction
		for i, r := range batch {
			if ok[i] {
				r.err = nil
			}
		}
		return ok, fmt.Errorf("commit: %w", err)
	}
	committed = true
	for i, t := range txns {
		if ok[i] {
			s.afterCommit(t)
		}
	}
	return ok, nil
}

// groupFailed ends a group whose transaction broke at request i: that request and the
// ones after it run again on their own, as do those before it that had succeeded.
func (s *Store) groupFailed(ok []bool, i int, err error) ([]bool, error) {
	for j := i; j < len(ok); j++ {
		ok[j] = true
	}
	return ok, errors.Join(errGroupBroken, err)
}

var errGroupBroken = errors.New("group transaction broken")

// runFn runs a request's fn and finish. A panic fails the request (its savepoint is
// rolled back) and is raised again in the requester's goroutine, so the other requests
// of its group are not lost with it.
func runFn(r *writeReq, t *txn) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
			err = fmt.Errorf("write transaction panicked: %v", p)
		}
	}()
	if err := r.fn(t); err != nil {
		return err
	}
	return t.finish(r.ctx)
}
