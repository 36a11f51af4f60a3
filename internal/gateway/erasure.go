package gateway

import (
	"wharf/internal/erasure"
	"wharf/internal/module"
)

// newErasure hands the store the module runtimes whose tables keep content of messages
// and builds the erasure service on the payload stores.
func (g *Gateway) newErasure() *erasure.Service {
	g.Store.SetMessageErasers(runtimesAs[module.MessageEraser](g))
	return erasure.New(g.Store, g.Blobs, g.log.With("component", "erasure"))
}
