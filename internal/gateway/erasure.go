package gateway

import (
	"context"

	"wharf/internal/erasure"
	"wharf/internal/module"
)

// newErasure hands the store the module runtimes whose tables keep content of messages
// and builds the erasure service on the payload stores.
func (g *Gateway) newErasure() *erasure.Service {
	g.Store.SetMessageErasers(runtimesAs[module.MessageEraser](g))
	return erasure.New(g.Store, g.Blobs, g.log.With("component", "erasure"))
}

// finishErasures deletes the payloads of erased messages that a crash between an
// erasure's commit and its blob deletion left behind.
func (g *Gateway) finishErasures(ctx context.Context) {
	n, err := g.Erasure.Purge(ctx)
	switch {
	case err != nil:
		g.log.Error("finish interrupted erasures", "err", err)
	case n > 0:
		g.log.Info("interrupted erasures finished", "payloads", n)
	}
}
