package gateway

import (
	"context"
	"os"
	"time"

	"wharf/internal/persistence/db"
	"wharf/internal/product"
)

// heartbeat records the process in the processes table at start and every
// db.HeartbeatInterval after, so the Services page shows every process of the
// installation with its roles and marks those that went silent.
type heartbeat struct {
	store interface {
		RecordHeartbeat(ctx context.Context, p db.Process) error
	}
	proc db.Process
	log  interface {
		Warn(msg string, args ...any)
	}
	quit, done chan struct{}
}

// startHeartbeat records the process once and then keeps its heartbeat going until
// Shutdown stops it.
func (g *Gateway) startHeartbeat(ctx context.Context) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	now := time.Now()
	hb := &heartbeat{store: g.Store, log: g.log.With("component", "heartbeat"),
		proc: db.Process{ID: g.holder, Host: host, Roles: g.roles.Names(), Version: product.Version(), StartedAt: now},
		quit: make(chan struct{}), done: make(chan struct{})}
	g.heartbeat = hb
	hb.beat(ctx, now)
	go hb.run(context.WithoutCancel(ctx))
}

func (hb *heartbeat) run(ctx context.Context) {
	defer close(hb.done)
	t := time.NewTicker(db.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			hb.beat(ctx, now)
		case <-hb.quit:
			return
		}
	}
}

// beat records one heartbeat; a failure is logged and the next beat tries again.
func (hb *heartbeat) beat(ctx context.Context, now time.Time) {
	hb.proc.HeartbeatAt = now
	cctx, cancel := context.WithTimeout(ctx, db.HeartbeatInterval)
	defer cancel()
	if err := hb.store.RecordHeartbeat(cctx, hb.proc); err != nil {
		hb.log.Warn("record heartbeat", "err", err)
	}
}

// stop ends the heartbeats; the row stays and turns stale.
func (hb *heartbeat) stop() {
	if hb == nil {
		return
	}
	close(hb.quit)
	<-hb.done
}
