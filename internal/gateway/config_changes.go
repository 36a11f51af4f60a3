package gateway

import (
	"fmt"

	"wharf/internal/bus"
)

// PluginsChanged announces a committed change of a plugin instance's record, so every
// process drops what it caches of the records (the event outbox's subscriptions). Lossy
// like the other announcements: the caches are also read again after a while.
func (s busSignals) PluginsChanged() { s.configChanged(bus.ConfigChangedPlugins) }

// PausesChanged announces that a partner was paused or resumed, so the other processes'
// stores read the pauses at their next claim.
func (s busSignals) PausesChanged() { s.configChanged(bus.ConfigChangedPauses) }

func (s busSignals) configChanged(what string) {
	if err := s.bus.Publish(bus.ConfigChangedSubject, []byte(what)); err != nil {
		// The other processes read their copies again within seconds anyway (the outbox
		// its subscriptions, the store the pauses), so the change is late there, not lost.
		s.log.Warn("announce a configuration change to the other processes", "what", what, "err", err)
	}
}

// followConfigChanges hands the announcements of pauses from other processes to the
// store. The process's own changes reach it at their commit already.
func (g *Gateway) followConfigChanges() error {
	sub, err := g.Bus.Subscribe(bus.ConfigChangedSubject, func(_ string, data []byte) {
		if string(data) == bus.ConfigChangedPauses {
			g.Store.PausesChanged()
		}
	})
	if err != nil {
		return fmt.Errorf("follow configuration changes: %w", err)
	}
	g.unfollowConfig = func() { _ = sub.Unsubscribe() }
	return nil
}
