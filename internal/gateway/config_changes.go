package gateway

import "wharf/internal/bus"

// PluginsChanged announces a committed change of a plugin instance's record, so every
// process drops what it caches of the records (the event outbox's subscriptions). Lossy
// like the other announcements: the caches are also read again after a while.
func (s busSignals) PluginsChanged() {
	if err := s.bus.Publish(bus.ConfigChangedSubject, []byte("plugins")); err != nil {
		s.log.Debug("publish configuration change", "err", err)
	}
}
