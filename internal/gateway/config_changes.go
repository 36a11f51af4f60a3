package gateway

import (
	"fmt"

	"wharf/internal/bus"
)

// What a configuration change announcement on the bus says changed.
const (
	changedPlugins = "plugins"
	changedPauses  = "pauses"
)

// PluginsChanged announces a committed change of a plugin instance's record, so every
// process drops what it caches of the records (the event outbox's subscriptions). Lossy
// like the other announcements: the caches are also read again after a while.
func (s busSignals) PluginsChanged() { s.configChanged(changedPlugins) }

// PausesChanged announces that a partner was paused or resumed, so the other processes'
// stores read the pauses at their next claim.
func (s busSignals) PausesChanged() { s.configChanged(changedPauses) }

func (s busSignals) configChanged(what string) {
	if err := s.bus.Publish(bus.ConfigChangedSubject, []byte(what)); err != nil {
		s.log.Debug("publish configuration change", "what", what, "err", err)
	}
}

// followConfigChanges hands the announcements of pauses from other processes to the
// store. The process's own changes reach it at their commit already.
func (g *Gateway) followConfigChanges() error {
	_, err := g.Bus.Subscribe(bus.ConfigChangedSubject, func(_ string, data []byte) {
		if string(data) == changedPauses {
			g.Store.PausesChanged()
		}
	})
	if err != nil {
		return fmt.Errorf("follow configuration changes: %w", err)
	}
	return nil
}
