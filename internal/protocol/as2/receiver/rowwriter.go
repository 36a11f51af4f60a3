package receiver

import (
	"context"
	"errors"
	"sync"
	"time"

	"wharf/internal/module"
)

// rowWriter runs the writes every message makes to as2_inbound (its reservation and its
// answer) in transactions shared by concurrent requests: one commit, and one sync of the
// database's log, for all the writes that arrived while the previous ones committed
// (group commit). A write that finds none in progress is committed at once; those that
// arrive meanwhile wait, and the first of them then commits them all together. When a
// shared transaction fails, each of its writes is run again alone, so that one write's
// failure (a unique constraint another process won) is never another's.
type rowWriter struct {
	db module.SQL

	mu      sync.Mutex
	busy    bool // a transaction is being run
	pending []*rowWrite
}

// rowWrite is one request's write: fn is run in a transaction, with the context its
// statements take, maybe more than once (a shared transaction that failed, a PostgreSQL
// serialization failure), so it must set whatever it reports anew on every run.
type rowWrite struct {
	fn  func(ctx context.Context, tx module.Tx) error
	err error
	// done receives true when this write's request is to run the next transaction,
	// false when its write has been run (err is set).
	done chan bool
}

// rowWriteTimeout bounds a shared transaction, which runs whether or not the requests
// waiting for it are still connected.
const rowWriteTimeout = time.Minute

func newRowWriter(db module.SQL) *rowWriter { return &rowWriter{db: db} }

// write runs fn in a write transaction, shared with the writes of other requests.
func (g *rowWriter) write(ctx context.Context, fn func(ctx context.Context, tx module.Tx) error) error {
	w := &rowWrite{fn: fn, done: make(chan bool, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, w)
	if g.busy {
		g.mu.Unlock()
		if lead := <-w.done; !lead {
			return w.err
		}
		g.mu.Lock()
	}
	g.busy = true
	batch := g.pending
	g.pending = nil
	g.mu.Unlock()

	for _, o := range batch {
		o.err = errWriteAbandoned
	}
	defer g.handOff(batch, w)
	g.run(ctx, batch)
	return w.err
}

// errWriteAbandoned is the error of the writes of a transaction that never finished
// (its fn panicked).
var errWriteAbandoned = errors.New("the shared transaction was abandoned")

// handOff tells the batch's other requests that their writes were run and lets the
// first request waiting since run what arrived meanwhile.
func (g *rowWriter) handOff(batch []*rowWrite, self *rowWrite) {
	for _, o := range batch {
		if o != self {
			o.done <- false
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) > 0 {
		g.pending[0].done <- true
		return
	}
	g.busy = false
}

// run runs a batch of writes in one transaction, or each alone when that fails.
func (g *rowWriter) run(ctx context.Context, batch []*rowWrite) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rowWriteTimeout)
	defer cancel()
	alone := func(w *rowWrite) error {
		return g.db.Write(ctx, func(tx module.Tx) error { return w.fn(ctx, tx) })
	}
	if len(batch) == 1 {
		batch[0].err = alone(batch[0])
		return
	}
	err := g.db.Write(ctx, func(tx module.Tx) error {
		for _, w := range batch {
			if err := w.fn(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for _, w := range batch {
			w.err = nil
		}
		return
	}
	for _, w := range batch {
		w.err = alone(w)
	}
}
