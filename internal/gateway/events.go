package gateway

import (
	"fmt"
	"maps"
	"slices"

	"wharf/internal/events"
	"wharf/internal/ui"
)

// eventStream builds the REST event stream, woken by the history announcements on the
// bus; closeStream ends its streams and listening when the HTTP server shuts down.
func (g *Gateway) eventStream() (s *events.Stream, closeStream func(), err error) {
	s = events.NewStream(g.Store.ModuleSQL(), g.log.With("component", "events"))
	unsub, err := busSignals{bus: g.Bus, log: g.log}.SubscribeMessages(func(int64) { s.Wake() })
	if err != nil {
		return nil, nil, fmt.Errorf("event stream: listen for history: %w", err)
	}
	return s, func() {
		unsub()
		s.Close()
	}, nil
}

// eventWebhooks is the module runtime that serves the web UI's Event webhooks pages; nil
// in a build without it.
func (g *Gateway) eventWebhooks() ui.EventWebhooks {
	for _, name := range slices.Sorted(maps.Keys(g.Runtimes)) {
		if w, ok := g.Runtimes[name].(ui.EventWebhooks); ok {
			return w
		}
	}
	return nil
}
