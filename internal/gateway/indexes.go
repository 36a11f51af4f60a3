package gateway

import "wharf/internal/module"

// messageIndexes are the module runtimes whose messages carry a protocol identity the
// message list shows and finds (the AS2 Message-ID).
func (g *Gateway) messageIndexes() []module.MessageIndex {
	var out []module.MessageIndex
	for _, name := range g.runtimeNames() {
		if p, ok := g.Runtimes[name].(module.MessageIndex); ok {
			out = append(out, p)
		}
	}
	return out
}

// messageFacters are the module runtimes that read a message for its verdict.
func (g *Gateway) messageFacters() []module.MessageFacter {
	var out []module.MessageFacter
	for _, name := range g.runtimeNames() {
		if p, ok := g.Runtimes[name].(module.MessageFacter); ok {
			out = append(out, p)
		}
	}
	return out
}
