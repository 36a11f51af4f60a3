package gateway

import (
	"log/slog"
	"strconv"
	"strings"

	"wharf/internal/alert"
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

// Announce publishes one event per message whose history a commit wrote; live views in
// every process follow them. Like wake-ups they are lossy: a view misses a change only
// until the next one.
func (s busSignals) Announce(messageIDs []int64) {
	for _, id := range messageIDs {
		if err := s.bus.Publish(bus.MessageEventSubject(id), nil); err != nil {
			s.log.Debug("publish message event", "message_id", id, "err", err)
		}
	}
}

// SubscribeMessages calls fn with the id of each message announced on the bus.
func (s busSignals) SubscribeMessages(fn func(messageID int64)) (func(), error) {
	sub, err := s.bus.Subscribe(bus.AllMessageEventsSubject, func(subject string, _ []byte) {
		id, err := strconv.ParseInt(strings.TrimPrefix(subject, "message."), 10, 64)
		if err == nil {
			fn(id)
		}
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// SubscribeNotifications calls fn each time the notifier announces changed rows of its
// log on the bus (alert.ChangedSubject), in whichever process they changed.
func (s busSignals) SubscribeNotifications(fn func()) (func(), error) {
	sub, err := s.bus.Subscribe(alert.ChangedSubject, func(string, []byte) { fn() })
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
