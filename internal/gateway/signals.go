package gateway

import (
	"log/slog"

	"wharf/internal/bus"
	"wharf/internal/persistence"
)

// busSignals carries delivery wake-ups over the bus.
type busSignals struct {
	bus *bus.Bus
	log *slog.Logger
}

func (s busSignals) Wake(targets []persistence.InstanceName) {
	for _, t := range targets {
		// Wake-ups are lossy by design: the sweep and the workers' polling catch up.
		if err := s.bus.Publish(bus.WakeupSubject(t), nil); err != nil {
			s.log.Debug("publish wake-up", "target", string(t), "err", err)
		}
	}
}

func (s busSignals) OnWake(target persistence.InstanceName, fn func()) (func(), error) {
	sub, err := s.bus.Subscribe(bus.WakeupSubject(target), func(string, []byte) { fn() })
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
