package gateway

import "wharf/internal/module"

// runtimesAs are the module runtimes that implement T, in the modules' order.
func runtimesAs[T any](g *Gateway) []T {
	var out []T
	for _, name := range g.runtimeNames() {
		if p, ok := g.Runtimes[name].(T); ok {
			out = append(out, p)
		}
	}
	return out
}

// messageIndexes are the module runtimes whose messages carry a protocol identity the
// message list shows and finds (the AS2 Message-ID).
func (g *Gateway) messageIndexes() []module.MessageIndex { return runtimesAs[module.MessageIndex](g) }

// messageFacters are the module runtimes that read a message for its verdict.
func (g *Gateway) messageFacters() []module.MessageFacter { return runtimesAs[module.MessageFacter](g) }
