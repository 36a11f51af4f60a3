package gateway

import "fmt"

// alertListener is a module runtime that hears alerts on the bus for the plugin
// instances of its process (the notifier instances).
type alertListener interface {
	Listen() error
}

// listenForAlerts lets a plugin process that runs no API role hear alerts for the
// instances it runs; the API role starts the runtimes whole, listening included.
func (g *Gateway) listenForAlerts() error {
	if g.roles.API || !g.roles.Plugins {
		return nil
	}
	for _, name := range g.runtimeNames() {
		if l, ok := g.Runtimes[name].(alertListener); ok {
			if err := l.Listen(); err != nil {
				return fmt.Errorf("module %s: listen for alerts: %w", name, err)
			}
		}
	}
	return nil
}
